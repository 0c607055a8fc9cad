package webhook

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v85/webhook"
)

func TestSignatureVerifiesWithAnIndependentVerifier(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"0195","type":"post.published","created_at":"2026-01-01T00:00:00Z","data":{}}`)
	secret, old := NewSecret(), NewSecret()
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	require.Len(t, secret, len("whsec_")+43)
	require.NotEqual(t, secret, old)
	now := time.Now()

	h := SignatureHeader(now, body, secret)
	require.Regexp(t, `^t=\d+,v1=[0-9a-f]{64}$`, h, "no spaces, one v1")
	require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(body, h, secret, 300*time.Second))
	require.Error(t, stripewebhook.ValidatePayloadWithTolerance(body, h, old, 300*time.Second), "another secret fails")
	require.Error(t, stripewebhook.ValidatePayloadWithTolerance(append(body, ' '), h, secret, 300*time.Second), "another body fails")

	// During a rotation: two v1 signatures, each secret verifies.
	h = SignatureHeader(now, body, secret, old)
	require.Regexp(t, `^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$`, h)
	require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(body, h, secret, 300*time.Second))
	require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(body, h, old, 300*time.Second))

	// The HMAC is keyed with the whole secret, prefix included: stripe's own computation agrees.
	require.Equal(t, Signature(secret, now, body), hexOf(stripewebhook.ComputeSignature(now, body, secret)))
	require.NotEqual(t, Signature(secret, now, body), Signature(strings.TrimPrefix(secret, "whsec_"), now, body))
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
