package api

import (
	"errors"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/platforms"
)

// This file is the one check of a post. Every door that accepts a post calls it: POST /v1/posts,
// /v1/posts/publish and /schedule, PATCH /v1/posts/:id, POST /v1/posts/:id/publish and
// /schedule, each row of a campaign, and through them the MCP tools and the dashboard (which call
// these operations). Its rules are, in order:
//
//   - each field on its own (post.CheckContent, CheckTargets, CheckMedia);
//   - the connected accounts and media are the caller's (apierr.AccountNotYours, MediaNotYours);
//   - the post as a whole (post.Validate), when the door knows the whole post;
//   - when the post is submitted for publication (published now or scheduled, not a draft), each
//     target network's own rules: the adapters' Validate, with the text as the network counts it
//     and the media's content types and sizes, the check the account runs before publishing.
//
// A draft is held to every rule but the networks': it may be written before its media is chosen
// or its text cut to fit (docs/decisions.md, Posts).

// submission is a post as a door received it. A nil field was not given (a PATCH).
type submission struct {
	content  *string
	accounts []string
	media    []string
	// whole asks for post.Validate: the door knows the whole post (a create).
	whole bool
	// publish asks for the networks' rules: the post goes to the networks (now or scheduled).
	publish bool
	// prior are errors the door found before the check (a campaign row's fields that could not be
	// read), reported first; later are errors the door found that are reported after the fields' (a campaign row's
	// time); like any error they stop the checks of the whole post.
	prior, later []string
}

// checkedPost is a submission that passed: its targets (accounts resolved to their platforms)
// and its media as the adapters see them.
type checkedPost struct {
	targets []persistence.Target
	files   []platforms.Media
}

// mediaCache resolves each media id of a request once.
type mediaCache map[string]*platforms.Media

// checkPost checks a submission of the user. errs are its refusals, every one found, each safe to
// show ("field: reason", or "platform: reason" for a network's); err is a failure to read the
// store.
func (h *handlers) checkPost(c *echo.Context, userID string, s *submission, cache mediaCache) (*checkedPost, []string, error) {
	errs := append([]string(nil), s.prior...)
	refuse := func(err error) {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			errs = append(errs, ae.Message)
			return
		}
		errs = append(errs, err.Error())
	}
	out := &checkedPost{}
	if s.content != nil {
		if err := post.CheckContent(*s.content); err != nil {
			refuse(err)
		}
	}
	if s.accounts != nil {
		if err := post.CheckTargets(len(s.accounts)); err != nil {
			refuse(err)
		}
		out.targets = make([]persistence.Target, 0, len(s.accounts))
		for _, id := range s.accounts {
			platform, ok, err := h.Store.AccountPlatform(userID, id)
			if err != nil {
				return nil, nil, h.storeError(c, err)
			}
			if !ok {
				refuse(apierr.AccountNotYours("platforms", id))
				continue
			}
			out.targets = append(out.targets, persistence.Target{AccountID: id, Platform: platform, Status: persistence.TargetPending})
		}
	}
	if len(s.media) > 0 {
		if err := post.CheckMedia(len(s.media)); err != nil {
			refuse(err)
		}
		var err error
		if out.files, err = h.resolveMedia(c, userID, s.media, cache, refuse); err != nil {
			return nil, nil, err
		}
	}
	errs = append(errs, s.later...)
	if len(errs) > 0 {
		return nil, errs, nil
	}
	if s.whole {
		content := ""
		if s.content != nil {
			content = *s.content
		}
		if err := post.Validate(&persistence.Post{Content: content, Targets: out.targets, MediaIDs: s.media}); err != nil {
			return nil, []string{err.Error()}, nil
		}
	}
	if s.publish && s.content != nil {
		if errs := h.networkErrors(*s.content, out.targets, out.files); len(errs) > 0 {
			return nil, errs, nil
		}
	}
	return out, nil, nil
}

// networkErrors checks a post by each of its networks' own rules (the adapters' Validate), once
// per network, as the account will check it before publishing: "platform: reason" for each
// network that refuses it.
func (h *handlers) networkErrors(content string, targets []persistence.Target, files []platforms.Media) []string {
	var errs []string
	seen := map[string]bool{}
	for _, t := range targets {
		if seen[t.Platform] {
			continue
		}
		seen[t.Platform] = true
		a := h.Adapters[platforms.Platform(t.Platform)]
		if a == nil {
			continue
		}
		if err := a.Validate(platforms.Post{Text: content, Media: files}); err != nil {
			errs = append(errs, networkMessage(t.Platform, err))
		}
	}
	return errs
}

// networkMessage is a network's refusal as a publish would report it: "platform: reason".
func networkMessage(platform string, err error) string {
	var pe *platforms.Error
	if errors.As(err, &pe) && pe.Message != "" {
		return platform + ": " + pe.Message
	}
	return platform + ": " + err.Error()
}

// resolveMedia resolves media ids of the user as the adapters see them (type, size, name, and
// the conversion an image allows); an id that is not a confirmed media of the user is refused
// through refuse and left out.
func (h *handlers) resolveMedia(c *echo.Context, userID string, ids []string, cache mediaCache, refuse func(error)) ([]platforms.Media, error) {
	files := make([]platforms.Media, 0, len(ids))
	for _, id := range ids {
		m, ok := cache[id]
		if !ok {
			var err error
			if m, err = h.oneMedia(c, userID, id); err != nil {
				return nil, err
			}
			cache[id] = m
		}
		if m == nil {
			refuse(apierr.MediaNotYours("media", id))
			continue
		}
		files = append(files, *m)
	}
	return files, nil
}

// oneMedia resolves one media id of the user; nil when it is not a confirmed media of the user.
// Without the media flow (a server built without storage) the stored record stands for it.
func (h *handlers) oneMedia(c *echo.Context, userID, id string) (*platforms.Media, error) {
	if h.Media == nil {
		var m *persistence.Media
		err := h.Store.View(func(tx *persistence.Tx) error {
			var err error
			m, err = tx.ConfirmedMedia(userID, id)
			return err
		})
		switch {
		case errors.Is(err, persistence.ErrNotFound) || errors.Is(err, persistence.ErrMediaUnconfirmed):
			return nil, nil
		case err != nil:
			return nil, h.storeError(c, err)
		}
		return &platforms.Media{ID: m.ID, ContentType: m.ContentType, Size: m.Size, Filename: m.OriginalFilename, AltText: m.AltText}, nil
	}
	ms, err := h.Media.Resolve(c.Request().Context(), userID, []string{id})
	var ue *blob.UnusableError
	switch {
	case errors.As(err, &ue):
		return nil, nil
	case err != nil:
		return nil, h.storeError(c, err)
	}
	return &ms[0], nil
}

// checkStored checks a stored post of the user about to be submitted for publication (POST
// /v1/posts/:id/publish and /schedule, and a PATCH of a scheduled post, on the post as changed)
// by its networks' rules, for the targets that will be published: every target but those already
// published. A post that is not the user's is left to the post's actor, which answers 404.
func (h *handlers) checkStored(c *echo.Context, userID string, p *persistence.Post) error {
	if p == nil || p.UserID != userID {
		return nil
	}
	var targets []persistence.Target
	for _, t := range p.Targets {
		if t.Status != persistence.TargetPublished {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	var bad []string
	files, err := h.resolveMedia(c, userID, p.MediaIDs, mediaCache{}, func(err error) {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			bad = append(bad, ae.Message)
		}
	})
	if err != nil {
		return err
	}
	if len(bad) == 0 {
		bad = h.networkErrors(p.Content, targets, files)
	}
	return refusal(bad)
}

// storedPost reads a post for checkStored; nil when there is none (the actor answers 404).
func (h *handlers) storedPost(c *echo.Context, id string) (*persistence.Post, error) {
	var p *persistence.Post
	err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		p, err = tx.Post(id)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, h.storeError(c, err)
	}
	return p, nil
}

// refusal answers a single post's refusals: 400 validation_error with the first (the order of
// checkPost: a field's before the networks'); nil when there are none.
func refusal(errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	return apierr.Validation("%s", errs[0])
}
