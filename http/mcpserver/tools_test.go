package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/heraldhq/herald/http/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// session connects an SDK client to tools over in-memory transports.
func session(t *testing.T, tools *Tools) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := tools.Server().Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Every tool has a title, an outputSchema of type object, and an input schema a strict validator
// takes: a single type per property (no ["null", …] unions), a description on each; the
// platform, status, range and granularity parameters list their values. The server advertises no
// listChanged (it is stateless).
func TestToolSchemas(t *testing.T) {
	t.Parallel()
	tools := NewTools(ToolsConfig{})
	cs := session(t, tools)
	caps := cs.InitializeResult().Capabilities
	require.NotNil(t, caps.Tools)
	require.False(t, caps.Tools.ListChanged)
	require.NotNil(t, caps.Resources)
	require.False(t, caps.Resources.ListChanged)
	require.Nil(t, caps.Prompts)

	list, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, len(tools.Scopes()))
	byName := map[string]*mcp.Tool{}
	for _, tool := range list.Tools {
		byName[tool.Name] = tool
		require.NotEmpty(t, tool.Title, tool.Name)
		require.Equal(t, tool.Title, tool.Annotations.Title, tool.Name)
		out, err := json.Marshal(tool.OutputSchema)
		require.NoError(t, err)
		var os struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(out, &os), tool.Name)
		require.Equal(t, "object", os.Type, "%s has an object outputSchema", tool.Name)
		in, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var sch struct {
			Type       string                    `json:"type"`
			Required   []string                  `json:"required"`
			Properties map[string]map[string]any `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(in, &sch))
		require.Equal(t, "object", sch.Type, tool.Name)
		for prop, p := range sch.Properties {
			require.NotEmpty(t, p["description"], "%s.%s has a description", tool.Name, prop)
			_, isString := p["type"].(string)
			require.True(t, isString, "%s.%s has one type, not a union: %v", tool.Name, prop, p["type"])
			if items, ok := p["items"].(map[string]any); ok {
				_, isString := items["type"].(string)
				require.True(t, isString, "%s.%s items have one type: %v", tool.Name, prop, items["type"])
			}
			switch prop {
			case "platform", "status", "range", "granularity", "mode":
				require.NotEmpty(t, p["enum"], "%s.%s lists its values", tool.Name, prop)
			}
		}
	}
	enum := func(tool, prop string) []any {
		in, _ := json.Marshal(byName[tool].InputSchema)
		var sch struct {
			Properties map[string]struct {
				Enum  []any `json:"enum"`
				Items struct {
					Enum []any `json:"enum"`
				} `json:"items"`
			} `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(in, &sch))
		if e := sch.Properties[prop].Enum; e != nil {
			return e
		}
		return sch.Properties[prop].Items.Enum
	}
	require.Contains(t, enum("get_analytics", "range"), "custom")
	require.Contains(t, enum("list_inbox_comments", "range"), "custom")
	for _, tool := range []string{"list_accounts", "list_posts", "list_inbox_comments", "list_inbox_dms", "retry_campaign"} {
		e := enum(tool, "platform")
		require.Subset(t, e, []any{"twitter_x", "x", "twitter", "bluesky"}, tool)
	}
	require.NotContains(t, enum("list_inbox_dms", "platform"), "youtube")
	require.NotContains(t, enum("connect_account", "platform"), "twitter_x", "X connects in the dashboard")
	require.Contains(t, enum("create_webhook", "events"), "post.published")

	// The new tools, with the scope of what they do.
	scopes := map[string]string{}
	for _, s := range tools.Scopes() {
		scopes[s.Tool] = s.Scope
	}
	for name, scope := range map[string]string{
		"create_campaign": ScopeWrite, "list_campaigns": ScopeRead, "get_campaign": ScopeRead, "retry_campaign": ScopeWrite,
		"list_webhooks": ScopeRead, "create_webhook": ScopeWrite, "delete_webhook": ScopeWrite,
		"like_comment": ScopeWrite, "hide_comment": ScopeWrite, "disconnect_account": ScopeWrite,
	} {
		require.Equal(t, scope, scopes[name], name)
		require.Equal(t, scope == ScopeRead, byName[name].Annotations.ReadOnlyHint, name)
	}
	require.True(t, *byName["disconnect_account"].Annotations.DestructiveHint)
	require.True(t, *byName["delete_webhook"].Annotations.DestructiveHint)

	res, err := cs.ListResources(context.Background(), nil)
	require.NoError(t, err)
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	require.ElementsMatch(t, []string{ResourceAccounts, ResourceRecentPosts}, uris)
}

// The API's field names in its messages become the tool's parameter names.
func TestAPIErrorsNameToolParameters(t *testing.T) {
	t.Parallel()
	e := &apiError{Status: 400, Code: "validation_error", Message: "platforms: Required; scheduledAt: Invalid datetime; posts[2].platforms: Required",
		Details: json.RawMessage(`{"field":"platforms"}`)}
	got := e.renamed(map[string]string{"platforms": "accounts", "scheduledAt": "scheduled_at"})
	require.Equal(t, "accounts: Required; scheduled_at: Invalid datetime; posts[2].accounts: Required", got.Message)
	require.JSONEq(t, `{"field":"accounts"}`, string(got.Details))
	// A word in prose is not a field.
	e = &apiError{Message: "connect the platforms first"}
	require.Equal(t, "connect the platforms first", e.renamed(map[string]string{"platforms": "accounts"}).Message)
}

// One alias rule: x, twitter and twitter_x are one network wherever a platform is taken.
func TestPlatformAliases(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"x", "X", "twitter", "twitter_x", " Twitter "} {
		p, err := platform("platform", n)
		require.NoError(t, err, n)
		require.Equal(t, "twitter_x", p, n)
	}
	_, err := platform("platform", "myspace")
	require.ErrorContains(t, err, `platform: "myspace" is not a platform`)
}

// The fetch slots: at most perUser for one user and total in all, refused at once beyond; a
// released slot serves again.
func TestFetchSlots(t *testing.T) {
	t.Parallel()
	s := newSlots(3, 2)
	r1, err := s.acquire("a")
	require.NoError(t, err)
	r2, err := s.acquire("a")
	require.NoError(t, err)
	_, err = s.acquire("a")
	require.ErrorContains(t, err, "2 media fetches of this user are already in progress")
	r3, err := s.acquire("b")
	require.NoError(t, err)
	_, err = s.acquire("c")
	require.ErrorContains(t, err, "its limit")
	r1()
	r1() // a second release changes nothing
	r4, err := s.acquire("c")
	require.NoError(t, err)
	_, err = s.acquire("d")
	require.Error(t, err)
	r2()
	r3()
	r4()
	require.Zero(t, s.inUse)
	require.Empty(t, s.byUser)
}

// A job Herald calls completed is published only when no target failed: partial when some did,
// failed when all did.
func TestPublishStatusWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status                  string
		total, completed, faild int
		want                    string
	}{
		{"queued", 2, 0, 0, "publishing"},
		{"processing", 2, 1, 1, "publishing"},
		{"completed", 2, 2, 0, "published"},
		{"completed", 2, 1, 1, "partial"},
		{"failed", 2, 0, 2, "failed"},
		{"completed", 3, 2, 1, "partial"},
	} {
		j := api.Job{Status: tc.status, Total: tc.total, Completed: tc.completed, Failed: tc.faild}
		require.Equal(t, tc.want, jobStatus(&j), "%+v", tc)
	}
}

// The series' steps: a week starts on Monday, a month on its first day.
func TestPeriodStart(t *testing.T) {
	t.Parallel()
	require.Equal(t, "2026-11-23", periodStart("2026-11-26", "week")) // a Thursday
	require.Equal(t, "2026-11-23", periodStart("2026-11-23", "week")) // a Monday
	require.Equal(t, "2026-11-23", periodStart("2026-11-29", "week")) // a Sunday
	require.Equal(t, "2026-11-01", periodStart("2026-11-26", "month"))
	require.Equal(t, "2026-11-26", periodStart("2026-11-26", "day"))
}
