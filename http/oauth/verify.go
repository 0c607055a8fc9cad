package oauth

import (
	"errors"

	"github.com/heraldhq/herald/http/auth"
)

// ErrWrongResource means an access token was issued for another resource (RFC 8707).
var ErrWrongResource = errors.New("access token was issued for another resource")

// VerifyBearer resolves an Authorization header for a resource, for a door other than /v1 (the
// MCP endpoint: resource MCPResource): an API key passes with full access; an access token must
// have been issued for resource, and carries its scopes in the principal. Its errors are the
// Authenticator's (auth.ErrMissing, ErrUnknown, ErrRevoked, ErrTokenExpired, …) or
// ErrWrongResource; each is a 401 with a challenge naming the resource's metadata.
func (s *Service) VerifyBearer(header, resource string) (*auth.Principal, error) {
	p, err := s.cfg.Auth.Authenticate(header)
	if err != nil {
		return nil, err
	}
	if p.OAuth() && p.Resource != resource {
		return nil, ErrWrongResource
	}
	return p, nil
}
