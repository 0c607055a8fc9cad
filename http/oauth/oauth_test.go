package oauth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

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
