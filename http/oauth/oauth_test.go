package oauth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckRedirectURI(t *testing.T) {
	t.Parallel()
	for uri, ok := range map[string]bool{
		"https://app.example/cb":          true,
		"http://127.0.0.1:6276/callback":  true,
		"http://[::1]:9/cb":               true,
		"http://localhost/cb":             true,
		"http://example.com/cb":           false,
		"http://127.0.0.2/cb":             false,
		"https://app.example/cb#frag":     false,
		"ftp://app.example/cb":            false,
		"/relative":                       false,
		"https://user@app.example/cb":     false,
		"http://localhost.evil.example/x": false,
	} {
		require.Equal(t, ok, checkRedirectURI(uri) == "", uri)
	}
}

func TestPKCE(t *testing.T) {
	t.Parallel()
	// RFC 7636 appendix B.
	verifier := "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	challenge := "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	require.True(t, validChallenge(challenge))
	require.True(t, pkceOK(verifier, challenge))
	require.False(t, pkceOK(verifier+"x", challenge))
	require.False(t, pkceOK("short", challenge))
}
