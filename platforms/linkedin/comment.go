package linkedin

// First comments (networks.md §3.2): the member comments on its post with the Community
// Management API's socialActions (POST /rest/socialActions/{post urn}/comments), as the actor
// that wrote the post, and finds the comment again on the same edge (GET). The comment's id is
// its URN, urn:li:comment:({post or activity urn},{comment id}); its link is the post's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

var _ platforms.FirstCommenter = (*Adapter)(nil)

// commentPages bounds how many pages of comments LookupComment reads.
const commentPages = 5

// comment is a comment as the socialActions edge answers it.
type comment struct {
	ID         string `json:"id"`
	CommentURN string `json:"commentUrn"`
	Actor      string `json:"actor"`
	Message    struct {
		Text string `json:"text"`
	} `json:"message"`
	Created struct {
		Time int64 `json:"time"`
	} `json:"created"`
}

// urn is the comment's URN: commentUrn, else built from the post and the comment's id.
func (c comment) urn(post string) string {
	if strings.HasPrefix(c.CommentURN, "urn:li:comment:") {
		return c.CommentURN
	}
	return "urn:li:comment:(" + post + "," + c.ID + ")"
}

func commentOf(on platforms.Publication, urn string) platforms.Publication {
	u := on.URL
	if u == "" {
		u = publication(on.ID).URL
	}
	return platforms.Publication{ID: urn, URL: u}
}

func (a *Adapter) checkComment(c platforms.Credentials, on platforms.Publication, text string) error {
	switch n := utf8.RuneCountInString(text); {
	case strings.TrimSpace(text) == "":
		return invalid("a comment needs text")
	case n > platforms.CommentMax(platforms.LinkedIn):
		return invalid("the comment is %d characters; LinkedIn allows %d", n, platforms.CommentMax(platforms.LinkedIn))
	case c.UserID == "":
		return platforms.Errorf(platforms.LinkedIn, platforms.Permanent, 0, "the account has no member id; reconnect it")
	case !strings.HasPrefix(on.ID, "urn:li:"):
		return &platforms.Error{Platform: platforms.LinkedIn, Kind: platforms.Permanent, Message: fmt.Sprintf("%q is not a LinkedIn post", on.ID), Err: platforms.ErrNotFound}
	}
	return nil
}

// PublishComment comments text on the member's post. The call that creates the comment is
// classified as the post's is: a 5xx or a lost answer is Unknown (LookupComment resolves it).
func (a *Adapter) PublishComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string) (platforms.Result, error) {
	if err := a.checkComment(c, on, text); err != nil {
		return platforms.Result{}, err
	}
	raw, _ := json.Marshal(map[string]any{"actor": authorURN(c), "object": on.ID, "message": map[string]string{"text": text}})
	r, err := platforms.Send(ctx, a.hc, platforms.LinkedIn, platforms.Call{Method: http.MethodPost, URL: a.base + "/rest/socialActions/" + encodeURN(on.ID) + "/comments",
		Body: raw, ContentType: "application/json", Bearer: c.AccessToken, Header: a.restHeader(), Create: true})
	if err != nil {
		return platforms.Result{}, err
	}
	if !r.OK() {
		return platforms.Result{}, classify(r, true)
	}
	var out comment
	_ = json.Unmarshal(r.Body, &out)
	if out.ID == "" {
		out.ID = r.Header.Get("x-restli-id")
	}
	if out.ID == "" && out.CommentURN == "" {
		if e := errorBody(r); e != nil {
			return platforms.Result{}, e
		}
		return platforms.Result{}, platforms.Garbled(platforms.LinkedIn, r, true, errors.New("no comment id in the answer"))
	}
	return platforms.Result{Publication: commentOf(on, out.urn(on.ID))}, nil
}

// LookupComment reads the post's comments (GET /rest/socialActions/{urn}/comments, up to 5 pages
// of 50) for the member's with exactly this text, created at or after since. Reading them needs
// r_member_social, as Lookup does: a 403 is a Permanent error wrapping
// platforms.ErrLookupUnsupported.
func (a *Adapter) LookupComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string, since time.Time) (platforms.Publication, bool, error) {
	if err := a.checkComment(c, on, text); err != nil {
		return platforms.Publication{}, false, err
	}
	sinceMs := since.UnixMilli()
	for page := 0; page < commentPages; page++ {
		var out struct {
			Elements []comment `json:"elements"`
		}
		u := fmt.Sprintf("%s/rest/socialActions/%s/comments?start=%d&count=%d", a.base, encodeURN(on.ID), page*lookupPageSize, lookupPageSize)
		r, err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: u, Bearer: c.AccessToken, Header: a.restHeader()}, &out)
		if err != nil {
			var e *platforms.Error
			if r != nil && r.Status == http.StatusForbidden && errors.As(err, &e) {
				e.Err = platforms.ErrLookupUnsupported
				e.Message = "LinkedIn does not let this app read the post's comments (r_member_social): " + e.Message
			}
			return platforms.Publication{}, false, err
		}
		if out.Elements == nil {
			return platforms.Publication{}, false, platforms.Garbled(platforms.LinkedIn, r, false, errors.New("no elements in the answer"))
		}
		for _, el := range out.Elements {
			if el.Actor == authorURN(c) && el.Message.Text == text && el.Created.Time >= sinceMs {
				return commentOf(on, el.urn(on.ID)), true, nil
			}
		}
		if len(out.Elements) < lookupPageSize {
			return platforms.Publication{}, false, nil
		}
	}
	return platforms.Publication{}, false, platforms.LookupIncomplete(platforms.LinkedIn, commentPages)
}
