package api

import (
	"fmt"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
)

// targets reads a post's targets: [{account_id, content?, media?, options?}], each entry the
// own text, media and options of one of the post's platforms (checkPost checks that they are).
// Absent: nil, nil. An entry's unknown key, a wrong type or a malformed id is refused here,
// naming the entry and the field.
func (o object) targets(field string) ([]targetSpec, error) {
	raw, ok := o[field]
	if !ok {
		return nil, nil
	}
	if jsonType(raw) != "array" {
		return nil, typeError(field, "array", raw)
	}
	items := splitArray(raw)
	if len(items) > post.MaxTargets {
		return nil, apierr.Validation("%s: at most %d entries, one per connected account", field, post.MaxTargets)
	}
	out := make([]targetSpec, 0, len(items))
	for i, it := range items {
		name := fmt.Sprintf("%s.%d", field, i)
		if jsonType(it) != "object" {
			return nil, typeError(name, "object", it)
		}
		e := splitObject(it)
		for k := range e {
			switch k {
			case "account_id", "content", "media", "options", "thread", "first_comment":
			default:
				return nil, apierr.Validation("%s: unknown field %q; a target takes account_id, content, media, options, thread and first_comment", name, k)
			}
		}
		var spec targetSpec
		id, err := e.str("account_id", true)
		if err != nil {
			return nil, prefixed(name, err)
		}
		if spec.AccountID, err = parseUUID(name+".account_id", *id); err != nil {
			return nil, err
		}
		if spec.Content, err = e.str("content", false); err != nil {
			return nil, prefixed(name, err)
		}
		if e.has("media") {
			media, err := e.uuids("media", false)
			if err != nil {
				return nil, prefixed(name, err)
			}
			spec.Media = &media
		}
		if opts, ok := e["options"]; ok && jsonType(opts) != "null" {
			if jsonType(opts) != "object" {
				return nil, typeError(name+".options", "object", opts)
			}
			spec.Options = opts
		}
		if spec.Thread, err = thread(name+".thread", e["thread"]); err != nil {
			return nil, err
		}
		if raw, ok := e["first_comment"]; ok && jsonType(raw) != "null" {
			if jsonType(raw) != "object" {
				return nil, typeError(name+".first_comment", "object", raw)
			}
			fc := splitObject(raw)
			for k := range fc {
				if k != "content" {
					return nil, apierr.Validation("%s.first_comment: unknown field %q; a first comment takes content", name, k)
				}
			}
			if spec.FirstComment, err = fc.str("content", true); err != nil {
				return nil, prefixed(name+".first_comment", err)
			}
		}
		out = append(out, spec)
	}
	return out, nil
}

// thread reads a target's thread: [{content, media?}], the parts after the post. Absent or null:
// nil.
func thread(field string, raw []byte) ([]persistence.ThreadPart, error) {
	if raw == nil || jsonType(raw) == "null" {
		return nil, nil
	}
	if jsonType(raw) != "array" {
		return nil, typeError(field, "array", raw)
	}
	items := splitArray(raw)
	if len(items) > platforms.MaxThreadParts-1 {
		return nil, apierr.Validation("%s: at most %d parts after the post (a thread of %d)", field, platforms.MaxThreadParts-1, platforms.MaxThreadParts)
	}
	out := make([]persistence.ThreadPart, 0, len(items))
	for i, it := range items {
		name := fmt.Sprintf("%s.%d", field, i)
		if jsonType(it) != "object" {
			return nil, typeError(name, "object", it)
		}
		e := splitObject(it)
		for k := range e {
			if k != "content" && k != "media" {
				return nil, apierr.Validation("%s: unknown field %q; a thread part takes content and media", name, k)
			}
		}
		content, err := e.str("content", true)
		if err != nil {
			return nil, prefixed(name, err)
		}
		part := persistence.ThreadPart{Content: *content}
		if part.MediaIDs, err = e.uuids("media", false); err != nil {
			return nil, prefixed(name, err)
		}
		if len(part.MediaIDs) == 0 {
			part.MediaIDs = nil
		}
		out = append(out, part)
	}
	return out, nil
}

// prefixed names the entry a field's refusal is about: "targets.0.content: ...".
func prefixed(name string, err error) error {
	if ae, ok := err.(*apierr.Error); ok {
		return apierr.Validation("%s.%s", name, ae.Message)
	}
	return err
}
