package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: whsec_ followed by 32 random bytes in unpadded
// base64url (43 characters).
func NewSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("webhook: crypto/rand failed: " + err.Error()) // the OS entropy source is gone
	}
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// Signature computes the v1 signature of a body at time t with one secret: the hex HMAC-SHA256 of
// "<t>.<body>" keyed with the whole secret string, whsec_ prefix included.
func Signature(secret string, t time.Time, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(t.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// SignatureHeader is the X-Service-Signature value: t=<unix>,v1=<hex>[,v1=<hex>...], one v1 per
// secret (the current one first, then the previous one during a rotation), without spaces.
func SignatureHeader(t time.Time, body []byte, secrets ...string) string {
	var sb strings.Builder
	sb.WriteString("t=")
	sb.WriteString(strconv.FormatInt(t.Unix(), 10))
	for _, s := range secrets {
		sb.WriteString(",v1=")
		sb.WriteString(Signature(s, t, body))
	}
	return sb.String()
}
