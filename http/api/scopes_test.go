package api

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/live"
	"github.com/heraldhq/herald/persistence/blob"
)

// The OpenAPI document's security of every /v1 operation is the router's: a bearer API key, or
// an OAuth token with the route's own scope, or with its class's umbrella.
func TestDocumentScopesMatchRoutes(t *testing.T) {
	t.Parallel()
	doc, err := Spec()
	require.NoError(t, err)
	h := &handlers{Deps: Deps{Media: &blob.Service{}, Webhooks: &webhook.Service{}, Live: &live.Service{}}}
	routed := map[string][]string{}
	for _, r := range h.routes() {
		routed[r.method+" "+V1Prefix+r.path] = r.scopes()
	}
	documented := map[string][]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + EchoPath(path)
			if _, ok := routed[key]; !ok {
				continue
			}
			require.NotNil(t, op.Security, key)
			var scopes []string
			bearer := false
			for _, req := range *op.Security {
				for name, sc := range req {
					switch name {
					case "bearerAuth":
						bearer = true
					case "oauth2":
						require.Len(t, sc, 1, "%s: each OAuth alternative names one scope", key)
						require.True(t, auth.KnownScope(sc[0]), sc[0])
						scopes = append(scopes, sc...)
					default:
						t.Fatalf("%s: unknown security scheme %s", key, name)
					}
				}
			}
			require.True(t, bearer, "%s accepts an API key", key)
			documented[key] = scopes
		}
	}
	require.Len(t, documented, len(routed), "every /v1 route is documented")
	for key, want := range routed {
		got := documented[key]
		sort.Strings(got)
		sort.Strings(want)
		require.Equal(t, want, got, key)
	}
	// The scheme declares the eleven scopes.
	flows := doc.Components.SecuritySchemes["oauth2"].Value.Flows.AuthorizationCode
	require.Len(t, flows.Scopes, len(auth.Scopes))
	for _, s := range auth.Scopes {
		require.Contains(t, flows.Scopes, s)
	}
}
