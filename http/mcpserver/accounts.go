package mcpserver

import (
	"context"
	"net/http"

	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/http/live"
)

// connectPlatforms are the networks POST /v1/accounts/connect connects (OAuth in the browser).
var connectPlatforms = []string{"linkedin", "instagram", "threads", "facebook", "youtube", "pinterest", "tiktok"}

func (t *Tools) addAccountTools() {
	add(t, read("whoami", "Who am I"), "The signed-in Herald user (e-mail, plan, time zone) and the workspace the tools act in: every account, post, media item, campaign and webhook the tools see or make is that workspace's.", t.whoami)
	add(t, read("list_accounts", "List connected accounts").enum("platform", platformNames()...),
		"The connected social accounts (account_id, platform, username, token status). Wherever a tool takes an account, give its account_id, or its platform when the user has exactly one account there.",
		t.listAccounts)
	add(t, write("connect_account", "Connect an account").enum("platform", connectPlatforms...),
		"Starts connecting a social account: answers an authorization URL the user must open in a browser. "+
			"X and Bluesky connect with credentials the user brings, in Herald's dashboard, not here.",
		t.connectAccount)
	add(t, read("get_account_capabilities", "Get an account's capabilities"),
		"What an account's network takes: its text limit and how it counts, its media limits, the JSON Schema of its options (options_schema: what a target's options may hold), "+
			"the options a post must give (required_options), the account's default options, and its live choices (TikTok privacy levels, Pinterest boards, YouTube categories and playlists). "+
			"fresh reads the choices from the network again.",
		t.getAccountCapabilities)
	add(t, write("set_account_defaults", "Set an account's default options").idempotent(),
		"Sets the network options every post to this account gets unless its target gives its own (checked against the account's options_schema from get_account_capabilities); {} clears them.",
		t.setAccountDefaults)
	add(t, write("disconnect_account", "Disconnect an account").destructive().idempotent(),
		"Disconnects a connected account: Herald revokes its token at the network and deletes the account; publishing to it fails from then on. It can be connected again with connect_account.",
		t.disconnectAccount)
}

type listAccountsIn struct {
	Platform string `json:"platform,omitempty" jsonschema:"only accounts on this platform"`
}

type connectIn struct {
	Platform string `json:"platform" jsonschema:"the network to connect"`
}

type accountIn struct {
	Account string `json:"account" jsonschema:"the account: its account_id, or a platform name when the user has exactly one account there"`
}

type capabilitiesIn struct {
	Account string `json:"account" jsonschema:"the account: its account_id, or a platform name when the user has exactly one account there"`
	Fresh   bool   `json:"fresh,omitempty" jsonschema:"read the account's live choices from its network again instead of Herald's cached copy"`
}

type defaultsIn struct {
	Account        string         `json:"account" jsonschema:"the account: its account_id, or a platform name when the user has exactly one account there"`
	DefaultOptions map[string]any `json:"default_options" jsonschema:"the network's options (the account's options_schema, from get_account_capabilities); {} clears them"`
}

// Me answers whoami.
type Me struct {
	UserID   string  `json:"user_id"`
	Email    string  `json:"email"`
	Name     *string `json:"name,omitempty"`
	Plan     string  `json:"plan"`
	Timezone string  `json:"timezone"`
	// WorkspaceID is the workspace the tools act in ("main" or a workspace's id) and
	// WorkspaceName its name, where known.
	WorkspaceID   string `json:"workspace_id,omitempty"`
	WorkspaceName string `json:"workspace_name,omitempty"`
}

// Account is a connected account as the tools answer it.
type Account struct {
	AccountID string `json:"account_id"`
	Platform  string `json:"platform"`
	// Kind is what the account is on its network (profile, organization, page, channel) and
	// DisplayName its name there: a member and the organisations they administer are separate
	// accounts on one platform.
	Kind        string  `json:"kind"`
	DisplayName *string `json:"display_name,omitempty"`
	Username    *string `json:"username,omitempty"`
	Active      bool    `json:"active"`
	TokenStatus *string `json:"token_status,omitempty"`
}

// AccountList answers list_accounts.
type AccountList struct {
	Accounts []Account `json:"accounts"`
}

// Authorization answers connect_account.
type Authorization struct {
	AuthorizationURL string `json:"authorization_url"`
	Next             string `json:"next"`
}

func (t *Tools) whoami(ctx context.Context, _ struct{}) (Me, error) {
	var v1 struct {
		ID       string  `json:"id"`
		Email    string  `json:"email"`
		Name     *string `json:"name"`
		Plan     string  `json:"plan"`
		Timezone string  `json:"timezone"`
		// WorkspaceID is /v1/me's workspace of the request, where the server says it.
		WorkspaceID string `json:"workspace_id"`
	}
	if _, err := t.call(ctx, get("/v1/me", nil), &v1); err != nil {
		return Me{}, err
	}
	me := Me{UserID: v1.ID, Email: v1.Email, Name: v1.Name, Plan: v1.Plan, Timezone: v1.Timezone, WorkspaceID: v1.WorkspaceID}
	if id := actingIn(ctx); id != "" {
		me.WorkspaceID = id
		if t.cfg.Workspace != nil {
			// /v1/me answered, so the workspace existed a moment ago; a failure here leaves
			// the name out rather than failing whoami.
			if w, err := t.cfg.Workspace(v1.ID, id); err == nil {
				me.WorkspaceID, me.WorkspaceName = w.ID, w.Name
			}
		}
	}
	return me, nil
}

func (t *Tools) listAccounts(ctx context.Context, in listAccountsIn) (AccountList, error) {
	name, err := platform("platform", in.Platform)
	if err != nil {
		return AccountList{}, err
	}
	list, err := t.accounts(ctx)
	if err != nil {
		return AccountList{}, err
	}
	out := AccountList{Accounts: []Account{}}
	for _, a := range list {
		if name == "" || a.Platform == name {
			out.Accounts = append(out.Accounts, Account{AccountID: a.ID, Platform: a.Platform, Kind: a.Kind, DisplayName: a.DisplayName, Username: a.Username, Active: a.IsActive, TokenStatus: a.TokenStatus})
		}
	}
	return out, nil
}

func (t *Tools) connectAccount(ctx context.Context, in connectIn) (Authorization, error) {
	name, err := platform("platform", in.Platform)
	if err != nil {
		return Authorization{}, err
	}
	var out Authorization
	if _, err := t.call(ctx, Request{Method: http.MethodPost, Path: "/v1/accounts/connect", Body: map[string]string{"platform": name}}, &out); err != nil {
		return Authorization{}, err
	}
	out.Next = "ask the user to open authorization_url in a browser and approve (where the network grants several accounts, such as a LinkedIn member's organisations or a user's Facebook Pages, they tick the ones to connect); then list_accounts shows each account with its kind"
	return out, nil
}

func (t *Tools) disconnectAccount(ctx context.Context, in accountIn) (Deleted, error) {
	id, err := t.resolveAccount(ctx, "account", in.Account)
	if err != nil {
		return Deleted{}, err
	}
	if id == "" {
		return Deleted{}, refuse("account: required")
	}
	if _, err := t.call(ctx, Request{Method: http.MethodDelete, Path: "/v1/accounts/" + esc(id)}, nil); err != nil {
		return Deleted{}, err
	}
	return Deleted{ID: id, Deleted: true}, nil
}

// getAccountCapabilities relays GET /v1/accounts/:id/capabilities: its answer is the tool's.
func (t *Tools) getAccountCapabilities(ctx context.Context, in capabilitiesIn) (live.Capabilities, error) {
	id, err := t.resolveAccount(ctx, "account", in.Account)
	if err != nil {
		return live.Capabilities{}, err
	}
	if id == "" {
		return live.Capabilities{}, refuse("account: required")
	}
	var out live.Capabilities
	if _, err := t.call(ctx, get("/v1/accounts/"+esc(id)+"/capabilities", query("fresh", btoa(in.Fresh))), &out); err != nil {
		return live.Capabilities{}, err
	}
	return out, nil
}

// setAccountDefaults relays PATCH /v1/accounts/:id {"default_options"}.
func (t *Tools) setAccountDefaults(ctx context.Context, in defaultsIn) (api.AccountDetail, error) {
	id, err := t.resolveAccount(ctx, "account", in.Account)
	if err != nil {
		return api.AccountDetail{}, err
	}
	if id == "" {
		return api.AccountDetail{}, refuse("account: required")
	}
	opts := in.DefaultOptions
	if opts == nil {
		opts = map[string]any{}
	}
	var out api.AccountDetail
	if _, err := t.call(ctx, Request{Method: http.MethodPatch, Path: "/v1/accounts/" + esc(id), Body: map[string]any{"default_options": opts}}, &out); err != nil {
		return api.AccountDetail{}, err
	}
	return out, nil
}
