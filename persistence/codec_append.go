package persistence

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Posts and jobs are the records written on every create, publish and phase change. They are
// encoded by hand-written appenders that produce exactly the bytes encoding/json produces for
// them (TestAppendersMatchEncodingJSON holds them to it), without reflection: encoding/json's
// reflective walk costs about ten times more, and its depth grows the stacks of the short-lived
// goroutines that actors run on. They are decoded by hand too (codec_decode.go).

// appendPost appends p's JSON encoding.
func appendPost(b []byte, p *Post) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, p.ID)
	b = append(b, `,"user_id":`...)
	b = appendString(b, p.UserID)
	if p.WorkspaceID != "" {
		b = append(b, `,"workspace_id":`...)
		b = appendString(b, p.WorkspaceID)
	}
	b = append(b, `,"content":`...)
	b = appendString(b, p.Content)
	b = append(b, `,"status":`...)
	b = appendString(b, p.Status)
	b = append(b, `,"scheduled_at":`...)
	b = appendTimePtr(b, p.ScheduledAt)
	if p.ScheduledZone != "" {
		b = append(b, `,"scheduled_zone":`...)
		b = appendString(b, p.ScheduledZone)
	}
	b = append(b, `,"created_at":`...)
	b = appendTime(b, p.CreatedAt)
	b = append(b, `,"updated_at":`...)
	b = appendTime(b, p.UpdatedAt)
	b = append(b, `,"media_ids":`...)
	b = appendStrings(b, p.MediaIDs)
	b = append(b, `,"targets":`...)
	if p.Targets == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Targets {
			if i > 0 {
				b = append(b, ',')
			}
			t := &p.Targets[i]
			b = append(b, `{"connected_account_id":`...)
			b = appendString(b, t.AccountID)
			b = append(b, `,"platform":`...)
			b = appendString(b, t.Platform)
			b = append(b, `,"status":`...)
			b = appendString(b, t.Status)
			b = append(b, `,"error":`...)
			if t.Error == nil {
				b = append(b, "null"...)
			} else {
				b = appendString(b, *t.Error)
			}
			if t.PublicationID != "" {
				b = append(b, `,"publication_id":`...)
				b = appendString(b, t.PublicationID)
			}
			if t.URL != "" {
				b = append(b, `,"url":`...)
				b = appendString(b, t.URL)
			}
			if t.PublishedAt != nil {
				b = append(b, `,"published_at":`...)
				b = appendTime(b, *t.PublishedAt)
			}
			if t.Content != nil {
				b = append(b, `,"content":`...)
				b = appendString(b, *t.Content)
			}
			if t.MediaIDs != nil {
				b = append(b, `,"media_ids":`...)
				b = appendStrings(b, *t.MediaIDs)
			}
			if len(t.Options) > 0 {
				b = append(b, `,"options":`...)
				b = appendRaw(b, t.Options)
			}
			if len(t.Thread) > 0 {
				b = append(b, `,"thread":`...)
				b = appendMarshal(b, t.Thread)
			}
			if t.FirstComment != nil {
				b = append(b, `,"first_comment":`...)
				b = appendMarshal(b, t.FirstComment)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, p.Version, 10)
	if p.TrackingID != nil {
		b = append(b, `,"tracking_id":`...)
		b = appendString(b, *p.TrackingID)
	}
	if p.FinishedJob != "" {
		b = append(b, `,"finished_job":`...)
		b = appendString(b, p.FinishedJob)
	}
	if p.QuotaCounted {
		b = append(b, `,"quota_counted":true`...)
	}
	if p.CampaignID != "" {
		b = append(b, `,"campaign_id":`...)
		b = appendString(b, p.CampaignID)
	}
	if p.Approval != nil {
		b = append(b, `,"approval":`...)
		b = appendMarshal(b, p.Approval)
	}
	if p.RejectionReason != nil {
		b = append(b, `,"rejection_reason":`...)
		b = appendString(b, *p.RejectionReason)
	}
	if p.ApprovalLink != nil {
		b = append(b, `,"approval_link":`...)
		b = appendMarshal(b, p.ApprovalLink)
	}
	if len(p.ApprovalLog) > 0 {
		b = append(b, `,"approval_log":`...)
		b = appendMarshal(b, p.ApprovalLog)
	}
	return append(b, '}')
}

// appendRaw appends a JSON value as encoding/json writes a json.RawMessage: compacted, with <, >,
// &, U+2028 and U+2029 escaped.
func appendRaw(b []byte, raw []byte) []byte {
	if plainJSON(raw) {
		return append(b, raw...)
	}
	var compact, escaped bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return append(b, "null"...) // never stored: options are encoded by Herald
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	return append(b, escaped.Bytes()...)
}

// plainJSON reports whether raw has none of what encoding/json would change in a RawMessage:
// whitespace (outside strings or in them: either way the slow path is exact), <, >, & and the
// first byte of U+2028 and U+2029. Options as Herald encodes them (encoding/json's output) are.
func plainJSON(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	return len(raw) > 0
}

// appendJob appends j's JSON encoding.
func appendJob(b []byte, j *Job) []byte {
	b = append(b, `{"tracking_id":`...)
	b = appendString(b, j.TrackingID)
	b = append(b, `,"post_id":`...)
	b = appendString(b, j.PostID)
	b = append(b, `,"user_id":`...)
	b = appendString(b, j.UserID)
	if j.WorkspaceID != "" {
		b = append(b, `,"workspace_id":`...)
		b = appendString(b, j.WorkspaceID)
	}
	b = append(b, `,"status":`...)
	b = appendString(b, j.Status)
	b = append(b, `,"targets":`...)
	if j.Targets == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range j.Targets {
			if i > 0 {
				b = append(b, ',')
			}
			t := &j.Targets[i]
			b = append(b, `{"target":`...)
			b = strconv.AppendInt(b, int64(t.Target), 10)
			b = append(b, `,"platform":`...)
			b = appendString(b, t.Platform)
			b = append(b, `,"connected_account_id":`...)
			b = appendString(b, t.AccountID)
			b = append(b, `,"phase":`...)
			b = appendString(b, t.Phase)
			b = append(b, `,"message":`...)
			b = appendString(b, t.Message)
			if t.PublicationID != "" {
				b = append(b, `,"publication_id":`...)
				b = appendString(b, t.PublicationID)
			}
			if t.URL != "" {
				b = append(b, `,"url":`...)
				b = appendString(b, t.URL)
			}
			if len(t.Parts) > 0 {
				b = append(b, `,"parts":`...)
				b = appendMarshal(b, t.Parts)
			}
			if t.Comment != nil {
				b = append(b, `,"comment":`...)
				b = appendMarshal(b, t.Comment)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"created_at":`...)
	b = appendTime(b, j.CreatedAt)
	b = append(b, `,"completed_at":`...)
	b = appendTimePtr(b, j.CompletedAt)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, j.Seq, 10)
	if j.PostSynced {
		b = append(b, `,"post_synced":true`...)
	} else {
		b = append(b, `,"post_synced":false`...)
	}
	if j.CampaignID != "" {
		b = append(b, `,"campaign_id":`...)
		b = appendString(b, j.CampaignID)
	}
	return append(b, '}')
}

// appendJobEvents appends the JSON encoding of a job change's events (job_events).
func appendJobEvents(b []byte, evs []JobEvent) []byte {
	if evs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		e := &evs[i]
		b = append(b, `{"target":`...)
		b = strconv.AppendInt(b, int64(e.Target), 10)
		b = append(b, `,"phase":`...)
		b = appendString(b, e.Phase)
		b = append(b, `,"message":`...)
		b = appendString(b, e.Message)
		b = append(b, `,"at":`...)
		b = appendTime(b, e.At)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendAttempt appends a's JSON encoding.
func appendAttempt(b []byte, a *Attempt) []byte {
	b = append(b, `{"job_id":`...)
	b = appendString(b, a.JobID)
	b = append(b, `,"target":`...)
	b = strconv.AppendInt(b, int64(a.Target), 10)
	b = append(b, `,"account_id":`...)
	b = appendString(b, a.AccountID)
	b = append(b, `,"started_at":`...)
	b = appendTime(b, a.StartedAt)
	if a.Step != 0 {
		b = append(b, `,"step":`...)
		b = strconv.AppendInt(b, int64(a.Step), 10)
	}
	if len(a.Done) > 0 {
		b = append(b, `,"done":`...)
		b = appendMarshal(b, a.Done)
	}
	if a.Pending {
		b = append(b, `,"pending":true`...)
	}
	return append(b, '}')
}

// appendEvent appends e's JSON encoding; its data must be rawEncodable.
func appendEvent(b []byte, e *Event) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, e.ID)
	b = append(b, `,"type":`...)
	b = appendString(b, e.Type)
	b = append(b, `,"user_id":`...)
	b = appendString(b, e.UserID)
	if e.WorkspaceID != "" {
		b = append(b, `,"workspace_id":`...)
		b = appendString(b, e.WorkspaceID)
	}
	b = append(b, `,"created_at":`...)
	b = appendTime(b, e.CreatedAt)
	b = append(b, `,"data":`...)
	if e.Data == nil {
		b = append(b, "null"...)
	} else {
		b = appendRaw(b, e.Data)
	}
	return append(b, '}')
}

// rawEncodable reports whether encoding/json encodes raw without an error: nil (null) or one
// valid JSON value. What it refuses is left to it, so that Encode returns its error.
func rawEncodable(raw []byte) bool {
	if raw == nil {
		return true
	}
	d := decoder{b: raw, ok: true}
	d.skip()
	d.ws()
	return d.ok && d.i == len(raw)
}

// appendMarshal appends v as encoding/json encodes it: the fields only some records carry (a
// thread's parts, a first comment) are left to it.
func appendMarshal(b []byte, v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...) // plain structs of strings: never fails
	}
	return append(b, raw...)
}

// timeEncodable reports whether t has the form time.Time.MarshalJSON accepts (a four-digit
// year and a zone offset within a day); records only hold such times, and the appenders are
// not used for a record that does not.
func timeEncodable(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off > -24*3600 && off < 24*3600
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

func appendTimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendTime(b, *t)
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// plainASCII tells the ASCII bytes a JSON string carries as they are (encoding/json's
// htmlSafeSet): one lookup a byte instead of six comparisons, on the text of every record.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString appends s as a JSON string the way encoding/json does: HTML-safe (<, > and &
// escaped), invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
