package post

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// The limits of a post.
const (
	// MaxContentLength is the longest post text, in characters: the longest any of the nine
	// networks accepts (Facebook's 63,206). Each network's own limit is its adapter's Validate,
	// which the API's one check of a post (http/api, check.go) runs when the post is submitted
	// for publication.
	MaxContentLength = 63206
	// MaxTargets caps the connected accounts one post goes to.
	MaxTargets = 50
	// MaxMedia caps the media of one post: the most any network takes in one post (a TikTok
	// photo post's 35). Each network's own count is its adapter's (platforms.MediaLimits).
	MaxMedia = 35
)

// InvalidError is a post that breaks a rule of Validate. Field names the request field
// (content, platforms, media); the message is safe to show.
type InvalidError struct {
	Field  string
	Reason string
	// Err is the underlying refusal, such as a *platforms.TextError.
	Err error
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

func (e *InvalidError) Unwrap() error { return e.Err }

// IsInvalid reports whether err is a post refused by Validate.
func IsInvalid(err error) bool {
	var e *InvalidError
	return errors.As(err, &e)
}

// CheckContent checks a post's text on its own: text a network may receive (platforms.CheckText:
// UTF-8, no control character but tab, line feed and carriage return) of at most
// MaxContentLength characters.
func CheckContent(s string) error {
	if err := platforms.CheckText(s); err != nil {
		return &InvalidError{Field: "content", Reason: err.Error(), Err: err}
	}
	if n := utf8.RuneCountInString(s); n > MaxContentLength {
		return &InvalidError{Field: "content", Reason: fmt.Sprintf("is %d characters; at most %d are allowed", n, MaxContentLength)}
	}
	return nil
}

// CheckTargets checks the number of connected accounts a post goes to: 1 to MaxTargets.
func CheckTargets(n int) error {
	switch {
	case n == 0:
		return &InvalidError{Field: "platforms", Reason: "must contain at least one connected account id"}
	case n > MaxTargets:
		return &InvalidError{Field: "platforms", Reason: fmt.Sprintf("at most %d connected accounts per post", MaxTargets)}
	}
	return nil
}

// CheckMedia checks the number of media of a post: at most MaxMedia.
func CheckMedia(n int) error {
	if n > MaxMedia {
		return &InvalidError{Field: "media", Reason: fmt.Sprintf("at most %d media per post", MaxMedia)}
	}
	return nil
}

// Validate checks the rules every post satisfies when it is created and after every change: its
// content (CheckContent), its targets (CheckTargets) and media (CheckMedia), and content that is
// not empty or blank unless the post has media. The API runs it on a new post; the actor runs it
// on the result of an update, so that an edit cannot leave a post that a create would refuse
// (empty content on a post without media, for example). Whether each target and media item
// exists and is the user's, and each network's own rules, are checked by the API's one check of
// a post (http/api, check.go), which reads them, on create and update alike.
func Validate(p *persistence.Post) error {
	if err := CheckContent(p.Content); err != nil {
		return err
	}
	if err := CheckTargets(len(p.Targets)); err != nil {
		return err
	}
	if err := CheckMedia(len(p.MediaIDs)); err != nil {
		return err
	}
	if strings.TrimSpace(p.Content) == "" && len(p.MediaIDs) == 0 && !everyTargetOwnsContent(p) {
		return &InvalidError{Field: "content", Reason: "must not be empty when the post has no media"}
	}
	for i := range p.Targets {
		t := &p.Targets[i]
		if t.Content != nil {
			if err := CheckContent(*t.Content); err != nil {
				return &InvalidError{Field: fmt.Sprintf("targets.%d.content", i), Reason: strings.TrimPrefix(err.Error(), "content: "), Err: err}
			}
		}
		if t.MediaIDs != nil && len(*t.MediaIDs) > MaxMedia {
			return &InvalidError{Field: fmt.Sprintf("targets.%d.media", i), Reason: fmt.Sprintf("at most %d media per post", MaxMedia)}
		}
		if strings.TrimSpace(t.EffectiveContent(p)) == "" && len(t.EffectiveMedia(p)) == 0 {
			return &InvalidError{Field: fmt.Sprintf("targets.%d.content", i), Reason: "must not be empty when the target has no media"}
		}
	}
	return nil
}

// everyTargetOwnsContent reports whether each target carries its own text or media, so that the
// post's own may stay empty.
func everyTargetOwnsContent(p *persistence.Post) bool {
	for i := range p.Targets {
		t := &p.Targets[i]
		if (t.Content == nil || strings.TrimSpace(*t.Content) == "") && (t.MediaIDs == nil || len(*t.MediaIDs) == 0) {
			return false
		}
	}
	return len(p.Targets) > 0
}
