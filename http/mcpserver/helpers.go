package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/http/api"
)

// apiError is a /v1 error answer: its message is the API's.
type apiError struct {
	Status  int
	Code    string
	Message string
	Details json.RawMessage
}

func (e *apiError) Error() string {
	s := e.Message
	if e.Code != "" {
		s += " (" + e.Code + ", HTTP " + strconv.Itoa(e.Status) + ")"
	}
	s += targetLines(e.Details)
	if len(e.Details) > 0 && string(e.Details) != "null" {
		s += " details: " + string(e.Details)
	}
	return s
}

// targetLines are a refusal's details.targets (the post's check, http/api's TargetCheck) one
// line per error, each naming its network and account, so that a model reads at once what to
// change for which target; "" when the details name no target.
func targetLines(details json.RawMessage) string {
	var d struct {
		Targets []api.TargetCheck `json:"targets"`
	}
	if len(details) == 0 || json.Unmarshal(details, &d) != nil || len(d.Targets) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nRefused for these targets (nothing was published; fix them, check with validate_post, then call again):")
	for _, t := range d.Targets {
		for _, fe := range t.Errors {
			b.WriteString("\n- " + t.Platform + " (account " + t.AccountID + "): ")
			if fe.Field != "" {
				b.WriteString(fe.Field + ": ")
			}
			b.WriteString(fe.Message)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// renamed is e with the /v1 field names of its message and details replaced by the tool's
// parameter names (params: REST name → tool name). A field name is replaced where the API's
// messages write one: at the start or after a separator, followed by ':', '.' or '['
// ("platforms: Required", "posts[2].scheduledAt: …").
func (e *apiError) renamed(params map[string]string) *apiError {
	if len(params) == 0 {
		return e
	}
	out := *e
	for rest, param := range params {
		re := regexp.MustCompile(`(^|[\s;,(.\]"])` + regexp.QuoteMeta(rest) + `([:.\["])`)
		out.Message = re.ReplaceAllString(out.Message, "${1}"+param+"${2}")
		if len(out.Details) > 0 {
			out.Details = json.RawMessage(re.ReplaceAllString(string(out.Details), "${1}"+param+"${2}"))
		}
	}
	return &out
}

// toolError is a refusal by the tool itself (an argument it cannot use).
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func refuse(format string, args ...any) error { return &toolError{fmt.Sprintf(format, args...)} }

// call sends a request and decodes a 2xx answer into out (when not nil); an error answer becomes
// an apiError.
func (t *Tools) call(ctx context.Context, r Request, out any) (*Response, error) {
	resp, err := t.cfg.API.Do(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("connector: %s %s: %w", r.Method, r.Path, err)
	}
	if resp.Status >= 300 {
		return nil, decodeError(resp)
	}
	if out != nil && len(resp.Body) > 0 {
		if err := json.Unmarshal(resp.Body, out); err != nil {
			return nil, fmt.Errorf("connector: %s %s: %w", r.Method, r.Path, err)
		}
	}
	return resp, nil
}

func decodeError(resp *Response) error {
	var body struct {
		Error struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(resp.Body, &body) != nil || body.Error.Message == "" {
		msg := strings.TrimSpace(string(resp.Body))
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return &apiError{Status: resp.Status, Message: fmt.Sprintf("HTTP %d %s", resp.Status, msg)}
	}
	return &apiError{Status: resp.Status, Code: body.Error.Code, Message: body.Error.Message, Details: body.Error.Details}
}

func get(p string, q url.Values) Request {
	if enc := q.Encode(); enc != "" {
		p += "?" + enc
	}
	return Request{Method: http.MethodGet, Path: p}
}

func esc(s string) string { return url.PathEscape(s) }

// query builds a query from name/value pairs, leaving out empty values.
func query(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func btoa(b bool) string {
	if !b {
		return ""
	}
	return "true"
}

// Platforms are Herald's network names.
var Platforms = []string{"twitter_x", "bluesky", "linkedin", "instagram", "threads", "facebook", "youtube", "pinterest", "tiktok"}

// platformAliases are the other names of networks. The one rule of every tool: a platform
// parameter, and an account named by platform, accept Herald's name or one of these.
var platformAliases = map[string]string{"x": "twitter_x", "twitter": "twitter_x"}

// platformNames are the names a platform parameter's enum lists for the networks given (all
// when none): each network's name and its aliases.
func platformNames(networks ...string) []string {
	if len(networks) == 0 {
		networks = Platforms
	}
	out := slices.Clone(networks)
	for alias, p := range platformAliases {
		if slices.Contains(networks, p) {
			out = append(out, alias)
		}
	}
	slices.Sort(out[len(networks):])
	return out
}

// platform reads a platform name ("" stays "").
func platform(param, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := platformAliases[n]; ok {
		n = a
	}
	if !slices.Contains(Platforms, n) {
		return "", refuse("%s: %q is not a platform; use one of %s", param, name, strings.Join(platformNames(), ", "))
	}
	return n, nil
}

// account is a connected account as /v1 answers it.
type account struct {
	ID          string  `json:"id"`
	Platform    string  `json:"platform"`
	Kind        string  `json:"kind"`
	DisplayName *string `json:"display_name"`
	Username    *string `json:"username"`
	IsActive    bool    `json:"is_active"`
	TokenStatus *string `json:"token_status"`
}

func (t *Tools) accounts(ctx context.Context) ([]account, error) {
	var list struct {
		Data []account `json:"data"`
	}
	if _, err := t.call(ctx, get("/v1/accounts", nil), &list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// resolveAccounts turns account references (ids, or platform names) into ids. A platform name
// stands for the user's one account there; with none or several the tool answers with the
// candidates. param names the tool's parameter in refusals.
func (t *Tools) resolveAccounts(ctx context.Context, param string, refs []string) ([]string, error) {
	var accounts []account
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		ref = strings.TrimSpace(ref)
		if _, err := uuid.Parse(ref); err == nil {
			out = append(out, ref)
			continue
		}
		name, err := platform(param, ref)
		if err != nil {
			return nil, refuse("%s: %q is neither an account id nor a platform name (list_accounts lists the ids; platforms: %s)", param, ref, strings.Join(platformNames(), ", "))
		}
		if accounts == nil {
			if accounts, err = t.accounts(ctx); err != nil {
				return nil, err
			}
			if accounts == nil {
				accounts = []account{}
			}
		}
		var match []account
		for _, a := range accounts {
			if a.Platform == name {
				match = append(match, a)
			}
		}
		switch len(match) {
		case 1:
			out = append(out, match[0].ID)
		case 0:
			return nil, refuse("%s: no connected account on %s (%q): name an account by its id (list_accounts) or connect one (connect_account)", param, name, ref)
		default:
			c := make([]string, len(match))
			for i, a := range match {
				u := "(no username)"
				if a.Username != nil {
					u = "@" + *a.Username
				}
				if a.Kind != "" && a.Kind != "profile" {
					u += " (" + a.Kind + ")"
				}
				c[i] = a.ID + " " + u
			}
			return nil, refuse("%s: %d accounts are connected on %s; name one by id. Candidates: %s", param, len(match), name, strings.Join(c, "; "))
		}
	}
	return out, nil
}

func (t *Tools) resolveAccount(ctx context.Context, param, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	ids, err := t.resolveAccounts(ctx, param, []string{ref})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}
