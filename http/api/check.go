package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
)

// This file is the one check of a post. Every door that accepts a post calls it: POST /v1/posts,
// /v1/posts/publish, /schedule and /validate, PATCH /v1/posts/:id, POST /v1/posts/:id/publish
// and /schedule, each row of a campaign, and through them the MCP tools and the dashboard (which
// call these operations). Its rules are, in order:
//
//   - each field on its own (post.CheckContent, CheckTargets, CheckMedia, and each entry of
//     targets: its account one of the post's, once; its content and media by the same rules);
//   - the connected accounts and media are the caller's (apierr.AccountNotYours, MediaNotYours);
//   - the post as a whole (post.Validate), when the door knows the whole post;
//   - each target's options decoded as its network's (platforms.DecodeOptions: no unknown key, no
//     option of another network, no wrong type);
//   - when the post is submitted for publication (published now or scheduled, not a draft), each
//     target by its network's own rules, on what the network would receive (the target's text,
//     media and options, the account's default options filled in): the adapter's Validate (text
//     as the network counts it, media types and sizes), platforms.CheckOptions (each option, the
//     required ones, alt text) against the account's live choices (http/live, cached).
//
// A draft is held to every rule but the networks': it may be written before its media is chosen,
// its text cut to fit or its options complete (docs/decisions.md, Posts); POST /v1/posts/validate
// tells what it still lacks.

// targetSpec is an entry of a request's targets: a target's own content, media and options.
type targetSpec struct {
	AccountID string
	Content   *string
	Media     *[]string
	Options   json.RawMessage
	// Thread are the parts after the post; FirstComment the comment's text (nil: none).
	Thread       []persistence.ThreadPart
	FirstComment *string
}

// submission is a post as a door received it. A nil field was not given (a PATCH).
type submission struct {
	content  *string
	accounts []string
	media    []string
	// specs are the request's targets entries; nil when it gave none.
	specs []targetSpec
	// kept are the targets' own content, media and options already stored, by account id, for
	// the accounts a PATCH keeps without giving targets.
	kept map[string]persistence.Target
	// whole asks for post.Validate: the door knows the whole post (a create).
	whole bool
	// publish asks for the networks' rules: the post goes to the networks (now or scheduled).
	publish bool
	// preview asks for each target's preview (POST /v1/posts/validate).
	preview bool
	// prior are errors the door found before the check (a campaign row's fields that could not be
	// read), reported first; later are errors the door found that are reported after the fields' (a campaign row's
	// time); like any error they stop the checks of the whole post.
	prior, later []string
}

// checkedPost is a submission that passed: its targets (accounts resolved to their platforms,
// with their own content, media and options) and its media as the adapters see them.
type checkedPost struct {
	targets []persistence.Target
	files   []platforms.Media
}

// TargetCheck is the check of one target, as POST /v1/posts/validate answers it and a refusal's
// details.targets lists it.
type TargetCheck struct {
	AccountID string                 `json:"account_id"`
	Platform  string                 `json:"platform"`
	Valid     bool                   `json:"valid"`
	Errors    []platforms.FieldError `json:"errors"`
	Warnings  []platforms.FieldError `json:"warnings"`
	Preview   *TargetPreview         `json:"preview,omitempty"`
}

// TargetPreview is what the target's network would receive.
type TargetPreview struct {
	Content string          `json:"content"`
	Length  TextLength      `json:"length"`
	Media   []PreviewMedia  `json:"media"`
	Options json.RawMessage `json:"options"`
	// LinkCard is the link card it would carry, as read from the page (linkcards.go).
	LinkCard *PreviewCard `json:"link_card,omitempty"`
}

// TextLength is a text's length as its network counts it, beside the network's limit.
type TextLength struct {
	Used int    `json:"used"`
	Max  int    `json:"max"`
	Unit string `json:"unit"`
}

// PreviewMedia is one media as the network would receive it.
type PreviewMedia struct {
	ID          string `json:"id"`
	ContentType string `json:"content_type"`
	// ConvertedTo is the type Herald converts the file to for this network (absent: sent as is).
	ConvertedTo string `json:"converted_to,omitempty"`
	AltText     string `json:"alt_text,omitempty"`
}

// checkResult is the outcome of checkPost: errs are its refusals, every one found, each safe to
// show ("field: reason", or "platform: field: reason" for a target's); targets are each target's
// own check (when the post's accounts could be resolved).
type checkResult struct {
	post *checkedPost
	errs []string
	// fields counts the errors of errs that are the post's own (the rest are its targets').
	fields  int
	targets []TargetCheck
}

// refusal is the result's 400 validation_error (its first error, and details.targets listing
// each target's errors when a target has any); nil when the post passed.
func (r *checkResult) refusal() error {
	if len(r.errs) == 0 {
		return nil
	}
	e := apierr.Validation("%s", r.errs[0])
	var bad []TargetCheck
	for _, t := range r.targets {
		if !t.Valid {
			t.Preview = nil
			bad = append(bad, t)
		}
	}
	if len(bad) > 0 {
		e = e.WithDetails(map[string]any{"targets": bad})
	}
	return e
}

// mediaCache resolves each media id of a request once.
type mediaCache map[string]*platforms.Media

// checkPost checks a submission of the user; err is a failure to read the store.
func (h *handlers) checkPost(c *echo.Context, scope string, s *submission, cache mediaCache) (*checkResult, error) {
	res := &checkResult{errs: append([]string(nil), s.prior...)}
	refuse := func(err error) {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			res.errs = append(res.errs, ae.Message)
			return
		}
		res.errs = append(res.errs, err.Error())
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
			platform, ok, err := h.Store.AccountPlatform(scope, id)
			if err != nil {
				return nil, h.storeError(c, err)
			}
			if !ok {
				refuse(apierr.AccountNotYours("platforms", id))
				continue
			}
			t := persistence.Target{AccountID: id, Platform: platform, Status: persistence.TargetPending}
			if k, ok := s.kept[id]; ok && s.specs == nil {
				t.Content, t.MediaIDs, t.Options, t.Thread, t.FirstComment = k.Content, k.MediaIDs, k.Options, k.Thread, k.FirstComment
			}
			out.targets = append(out.targets, t)
		}
	}
	if len(s.media) > 0 {
		if err := post.CheckMedia(len(s.media)); err != nil {
			refuse(err)
		}
		var err error
		if out.files, err = h.resolveMedia(c, scope, "media", s.media, cache, refuse); err != nil {
			return nil, err
		}
	}
	if err := h.applySpecs(c, scope, s, out, cache, refuse); err != nil {
		return nil, err
	}
	res.errs = append(res.errs, s.later...)
	res.fields = len(res.errs)
	if len(res.errs) > 0 {
		return res, nil
	}
	if s.whole {
		content := ""
		if s.content != nil {
			content = *s.content
		}
		if err := post.Validate(&persistence.Post{Content: content, Targets: out.targets, MediaIDs: s.media}); err != nil {
			res.errs = append(res.errs, err.Error())
			res.fields = len(res.errs)
			return res, nil
		}
	}
	if s.content != nil || s.specs != nil {
		p := &persistence.Post{Targets: out.targets, MediaIDs: s.media}
		if s.content != nil {
			p.Content = *s.content
		}
		var err error
		if res.targets, err = h.checkTargets(c, scope, p, out.files, cache, s.publish, s.preview); err != nil {
			return nil, err
		}
		res.fields = len(res.errs)
		res.errs = append(res.errs, targetMessages(res.targets)...)
	}
	if len(res.errs) == 0 {
		res.post = out
	}
	return res, nil
}

// applySpecs checks the request's targets entries and lays each over its target.
func (h *handlers) applySpecs(c *echo.Context, scope string, s *submission, out *checkedPost, cache mediaCache, refuse func(error)) error {
	seen := map[string]bool{}
	for i, spec := range s.specs {
		field := fmt.Sprintf("targets.%d", i)
		k := -1
		for j := range out.targets {
			if out.targets[j].AccountID == spec.AccountID {
				k = j
			}
		}
		switch {
		case seen[spec.AccountID]:
			refuse(apierr.Validation("%s.account_id: %s is given twice; one entry per account", field, spec.AccountID))
			continue
		case k < 0 && slices.Contains(s.accounts, spec.AccountID):
			continue // refused already: not the caller's account
		case k < 0:
			refuse(apierr.Validation("%s.account_id: %s is not one of the post's platforms", field, spec.AccountID))
			continue
		}
		seen[spec.AccountID] = true
		t := &out.targets[k]
		if spec.Content != nil {
			if err := post.CheckContent(*spec.Content); err != nil {
				refuse(apierr.Validation("%s.%s", field, err.Error()))
			}
			t.Content = spec.Content
		}
		if spec.Media != nil {
			if err := post.CheckMedia(len(*spec.Media)); err != nil {
				refuse(apierr.Validation("%s.%s", field, err.Error()))
			}
			if _, err := h.resolveMedia(c, scope, field+".media", *spec.Media, cache, refuse); err != nil {
				return err
			}
			t.MediaIDs = spec.Media
		}
		t.Options = spec.Options
		t.Thread, t.FirstComment = spec.Thread, nil
		for j, part := range spec.Thread {
			name := fmt.Sprintf("%s.thread.%d", field, j)
			if strings.TrimSpace(part.Content) == "" && len(part.MediaIDs) == 0 {
				refuse(apierr.Validation("%s.content: a thread part needs text or media", name))
			} else if err := post.CheckContent(part.Content); err != nil {
				refuse(apierr.Validation("%s.%s", name, err.Error()))
			}
			if len(part.MediaIDs) > 0 {
				if err := post.CheckMedia(len(part.MediaIDs)); err != nil {
					refuse(apierr.Validation("%s.%s", name, err.Error()))
				}
				if _, err := h.resolveMedia(c, scope, name+".media", part.MediaIDs, cache, refuse); err != nil {
					return err
				}
			}
		}
		if spec.FirstComment != nil {
			if strings.TrimSpace(*spec.FirstComment) == "" {
				refuse(apierr.Validation("%s.first_comment.content: must not be empty", field))
			}
			t.FirstComment = &persistence.FirstComment{Content: *spec.FirstComment, Status: persistence.CommentPending}
		}
	}
	return nil
}

// checkTargets checks each target of a post by its options and, when the post is submitted for
// publication, its network's rules, on what the network would receive; files are the post's own
// media, resolved.
func (h *handlers) checkTargets(c *echo.Context, scope string, p *persistence.Post, files []platforms.Media, cache mediaCache, publish, withPreview bool) ([]TargetCheck, error) {
	// defaults are the default options of the targets' accounts that are the caller's (an
	// account absent was disconnected since the post was written).
	var defaults map[string]json.RawMessage
	if publish {
		defaults = map[string]json.RawMessage{}
		var read []string // the accounts whose defaults are read from their records
		for _, t := range p.Targets {
			has, ok, err := h.Store.AccountHasDefaults(scope, t.AccountID)
			switch {
			case err != nil:
				return nil, h.storeError(c, err)
			case !ok:
			case has:
				read = append(read, t.AccountID)
			default:
				defaults[t.AccountID] = nil
			}
		}
		if len(read) > 0 {
			if err := h.Store.View(func(tx *persistence.Tx) error {
				for _, id := range read {
					d, ok, err := tx.AccountDefaults(scope, id)
					if err != nil && !errors.Is(err, persistence.ErrNotFound) {
						return err
					}
					if ok {
						defaults[id] = d
					}
				}
				return nil
			}); err != nil {
				return nil, h.storeError(c, err)
			}
		}
		for _, t := range p.Targets {
			if d, ok := defaults[t.AccountID]; ok && len(d) == 0 && lacksRequired(platforms.Platform(t.Platform), t.Options) {
				// An account stored before accounts had default options takes what its
				// connection chose when its actor loads it: ask it, only when the target itself
				// leaves out an option its network requires (else nothing the answer holds matters).
				if r, err := ask[*account.Reply](h, c, h.Accounts.To(t.AccountID), &account.Get{}); err == nil {
					defaults[t.AccountID] = r.Account.DefaultOptions
				}
			}
		}
	}
	out := make([]TargetCheck, 0, len(p.Targets))
	var cards []cardTarget
	for i := range p.Targets {
		t := &p.Targets[i]
		tc := TargetCheck{AccountID: t.AccountID, Platform: t.Platform, Errors: []platforms.FieldError{}, Warnings: []platforms.FieldError{}}
		fail := func(field, msg string) {
			tc.Errors = append(tc.Errors, platforms.FieldError{Field: field, Message: msg})
		}
		platform := platforms.Platform(t.Platform)
		media := files
		if t.MediaIDs != nil {
			var err error
			if media, err = h.resolveMedia(c, scope, "media", *t.MediaIDs, cache, func(error) {}); err != nil {
				return nil, err
			}
		}
		own := t.Options
		if publish {
			d, ok := defaults[t.AccountID]
			if !ok {
				fail("account_id", "the connected account was disconnected; connect it again")
				out = append(out, tc)
				continue
			}
			merged, err := platforms.MergeOptions(d, own)
			if err != nil {
				fail("options", "must be an object")
			}
			own = merged
		}
		opts, fe := platforms.DecodeOptions(platform, own)
		if fe != nil {
			tc.Errors = append(tc.Errors, *fe)
		}
		text := t.EffectiveContent(p)
		if publish && fe == nil {
			var choices *platforms.Choices
			if h.Live != nil {
				choices = h.Live.Choices(c.Request().Context(), scope, t.AccountID, platform)
			}
			errs, warnings := platforms.CheckOptions(opts, platforms.Target{Text: text, Media: media, Choices: choices})
			tc.Errors = append(tc.Errors, errs...)
			tc.Warnings = append(tc.Warnings, warnings...)
			if a := h.Adapters[platform]; a != nil {
				if err := a.Validate(platforms.Post{Text: text, Media: media, Options: opts}); err != nil {
					msg := networkReason(err)
					tc.Errors = append(tc.Errors, platforms.FieldError{Field: validateField(msg), Message: msg})
				}
			}
		}
		stepErrs, err := h.checkSteps(c, scope, platform, t, publish, cache)
		if err != nil {
			return nil, err
		}
		tc.Errors = append(tc.Errors, stepErrs...)
		tc.Valid = len(tc.Errors) == 0
		if withPreview {
			tc.Preview = preview(platform, text, media, opts)
			if link, field, ok := cardFor(opts, text, media); ok && publish && fe == nil {
				cards = append(cards, cardTarget{i: len(out), link: link, field: field, platform: platform})
			}
		}
		out = append(out, tc)
	}
	h.readCards(c.Request().Context(), out, cards)
	return out, nil
}

// checkSteps checks a target's thread and first comment: that its network takes them, and when
// the post is submitted for publication, each part by the network's rules for a post (text as it
// counts it, media) and the comment's length (CommentMax; on X, Bluesky and Threads a reply,
// held to the network's rules for a post).
func (h *handlers) checkSteps(c *echo.Context, scope string, p platforms.Platform, t *persistence.Target, publish bool, cache mediaCache) ([]platforms.FieldError, error) {
	var out []platforms.FieldError
	if len(t.Thread) > 0 && !p.HasThreads() {
		out = append(out, platforms.FieldError{Field: "thread", Message: fmt.Sprintf("%s has no threads; threads are published on X, Bluesky and Threads", p.Name())})
	}
	if t.FirstComment != nil && platforms.CommentMax(p) == 0 {
		out = append(out, platforms.FieldError{Field: "first_comment", Message: fmt.Sprintf("%s offers no comment Herald can publish; first comments are published on LinkedIn, Instagram, Facebook, YouTube, X, Bluesky and Threads", p.Name())})
	}
	a := h.Adapters[p]
	if len(out) > 0 || !publish || a == nil {
		return out, nil
	}
	for i, part := range t.Thread {
		media, err := h.resolveMedia(c, scope, "media", part.MediaIDs, cache, func(error) {})
		if err != nil {
			return nil, err
		}
		if err := a.Validate(platforms.Post{Text: part.Content, Media: media}); err != nil {
			msg := networkReason(err)
			out = append(out, platforms.FieldError{Field: fmt.Sprintf("thread.%d.%s", i, validateField(msg)), Message: msg})
		}
	}
	if fc := t.FirstComment; fc != nil {
		if p.HasThreads() {
			if err := a.Validate(platforms.Post{Text: fc.Content}); err != nil {
				out = append(out, platforms.FieldError{Field: "first_comment.content", Message: networkReason(err)})
			}
		} else if n, max := utf8.RuneCountInString(fc.Content), platforms.CommentMax(p); n > max {
			out = append(out, platforms.FieldError{Field: "first_comment.content",
				Message: fmt.Sprintf("is %d characters; %s takes comments of at most %d", n, p.Name(), max)})
		}
	}
	return out, nil
}

// lacksRequired reports whether options (a target's own) leave out an option network p requires.
func lacksRequired(p platforms.Platform, options json.RawMessage) bool {
	for _, name := range platforms.RequiredOptions(p) {
		var m map[string]json.RawMessage
		if json.Unmarshal(options, &m) != nil || m[name] == nil {
			return true
		}
	}
	return false
}

// targetMessages are the targets' errors as a refusal's message reads them: "platform: field:
// reason", or "platform: reason" for the network's refusal of the text or media (as a publish
// would report it).
func targetMessages(ts []TargetCheck) []string {
	var out []string
	for _, t := range ts {
		for _, e := range t.Errors {
			if e.Field == "content" || e.Field == "media" {
				out = append(out, t.Platform+": "+e.Message)
				continue
			}
			out = append(out, t.Platform+": "+e.Error())
		}
	}
	return out
}

// validateField names the field an adapter's refusal is about: its text or its media.
func validateField(msg string) string {
	if strings.HasPrefix(msg, "text") || strings.HasPrefix(msg, "a post needs text") {
		return "content"
	}
	return "media"
}

// preview is what a target's network would receive.
func preview(p platforms.Platform, text string, media []platforms.Media, opts platforms.Options) *TargetPreview {
	tl := registry.TextLimitOf(p, media)
	pv := &TargetPreview{Content: text, Length: TextLength{Used: registry.TextLength(p, text), Max: tl.Max, Unit: tl.Count},
		Media: make([]PreviewMedia, 0, len(media)), Options: platforms.EncodeOptions(opts)}
	if pv.Options == nil {
		pv.Options = json.RawMessage("{}")
	}
	rule, converts := registry.ImageRules[p]
	for _, m := range media {
		pm := PreviewMedia{ID: m.ID, ContentType: m.ContentType, AltText: m.AltText}
		if converts && !m.IsVideo() && !m.IsDocument() && !rule.Takes(m.ContentType) {
			pm.ConvertedTo = "image/jpeg"
		}
		if platforms.AltTextMax(p) == 0 {
			pm.AltText = ""
		}
		pv.Media = append(pv.Media, pm)
	}
	return pv
}

// networkReason is a network's refusal without its platform.
func networkReason(err error) string {
	var pe *platforms.Error
	if errors.As(err, &pe) && pe.Message != "" {
		return pe.Message
	}
	return err.Error()
}

// resolveMedia resolves media ids of the user as the adapters see them (type, size, name, and
// the conversion an image allows); an id that is not a confirmed media of the user is refused
// through refuse and left out.
func (h *handlers) resolveMedia(c *echo.Context, scope, field string, ids []string, cache mediaCache, refuse func(error)) ([]platforms.Media, error) {
	files := make([]platforms.Media, 0, len(ids))
	for _, id := range ids {
		m, ok := cache[id]
		if !ok {
			var err error
			if m, err = h.oneMedia(c, scope, id); err != nil {
				return nil, err
			}
			cache[id] = m
		}
		if m == nil {
			refuse(apierr.MediaNotYours(field, id))
			continue
		}
		files = append(files, *m)
	}
	return files, nil
}

// oneMedia resolves one media id of the user; nil when it is not a confirmed media of the user.
// Without the media flow (a server built without storage) the stored record stands for it.
func (h *handlers) oneMedia(c *echo.Context, scope, id string) (*platforms.Media, error) {
	if h.Media == nil {
		var m *persistence.Media
		err := h.Store.View(func(tx *persistence.Tx) error {
			var err error
			m, err = tx.ConfirmedMedia(scope, id)
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
	ms, err := h.Media.Resolve(c.Request().Context(), scope, []string{id})
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
func (h *handlers) checkStored(c *echo.Context, scope string, p *persistence.Post) error {
	if p == nil || p.Scope() != scope {
		return nil
	}
	q := *p
	q.Targets = nil
	for _, t := range p.Targets {
		if t.Status != persistence.TargetPublished {
			q.Targets = append(q.Targets, t)
		}
	}
	if len(q.Targets) == 0 {
		return nil
	}
	res := &checkResult{}
	cache := mediaCache{}
	files, err := h.resolveMedia(c, scope, "media", p.MediaIDs, cache, func(err error) {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			res.errs = append(res.errs, ae.Message)
		}
	})
	if err != nil {
		return err
	}
	if len(res.errs) == 0 {
		if res.targets, err = h.checkTargets(c, scope, &q, files, cache, true, false); err != nil {
			return err
		}
		res.errs = append(res.errs, targetMessages(res.targets)...)
	}
	return res.refusal()
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
