package persistence

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"
)

// Posts and jobs are read every time their actor activates (a job on its first report, a post
// when it takes a job's outcome, an account when it sends a post), so they are decoded by hand
// as well: a scanner that knows their fields and gives exactly what encoding/json gives for the
// same bytes (TestDecodersMatchEncodingJSON and FuzzDecodePost/FuzzDecodeJob hold it to that),
// without reflection. It decodes what the appenders write and what encoding/json wrote before
// them, in any key order. Anything it does not recognise (an unknown or repeated key, a key in
// another case or escaped, a surrogate escape, invalid UTF-8, a number with a fraction, null
// where the appenders never write one) leaves the whole record to encoding/json, so that a
// record of another layout decodes as before and no field is ever dropped. The fields only some
// records carry (a thread, a first comment, an approval) are found by the scanner and decoded
// by encoding/json.

// decodeFast decodes b into v when v is a zero *Post, *PostContent or *Job and b is within
// what the hand-written decoder recognises; false leaves v as it was (zero), for encoding/json.
// (encoding/json merges into a value that is not zero; the hand-written decoder is used only
// where that cannot make a difference.)
func decodeFast(b []byte, v any) bool {
	switch r := v.(type) {
	case *Post:
		if !reflect.ValueOf(r).Elem().IsZero() {
			return false
		}
		d := decoder{b: b, ok: true}
		if !d.document(func() { d.post(r) }) {
			*r = Post{} // as it was, for encoding/json
			return false
		}
		return true
	case *PostContent:
		if !reflect.ValueOf(r).Elem().IsZero() {
			return false
		}
		var p Post
		d := decoder{b: b, ok: true, content: true}
		if !d.document(func() { d.post(&p) }) {
			return false
		}
		*r = contentProjection(&p)
		return true
	case *Job:
		if !reflect.ValueOf(r).Elem().IsZero() {
			return false
		}
		d := decoder{b: b, ok: true}
		if !d.document(func() { d.job(r) }) {
			*r = Job{}
			return false
		}
		return true
	}
	return false
}

// contentProjection is what encoding/json makes of a post's record decoded into a PostContent:
// unlike ContentOf, it has one TargetContent per target whenever targets is not null.
func contentProjection(p *Post) PostContent {
	c := PostContent{UserID: p.UserID, WorkspaceID: p.WorkspaceID, Content: p.Content, MediaIDs: p.MediaIDs}
	if p.Targets != nil {
		c.Targets = make([]TargetContent, len(p.Targets))
		for i := range p.Targets {
			t := &p.Targets[i]
			c.Targets[i] = TargetContent{Content: t.Content, MediaIDs: t.MediaIDs, Options: t.Options, Thread: t.Thread, FirstComment: t.FirstComment}
		}
	}
	return c
}

// decoder scans one JSON document. ok turns false at the first thing it does not recognise;
// the scan then stops (i jumps to the end) and the caller leaves the record to encoding/json.
type decoder struct {
	b  []byte
	i  int
	ok bool
	// content decodes only a PostContent's fields of a post: the others are checked and passed
	// over, as encoding/json passes over the fields a type does not have.
	content bool
}

// maxSkipDepth bounds the nesting the scanner walks through (encoding/json allows 10,000):
// deeper values are left to encoding/json.
const maxSkipDepth = 256

func (d *decoder) fail() {
	d.ok = false
	d.i = len(d.b)
}

// document decodes one value with value, then requires the end of the input.
func (d *decoder) document(value func()) bool {
	value()
	d.ws()
	return d.ok && d.i == len(d.b)
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace (0 at the end).
func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// consume takes c if it is the next byte after whitespace.
func (d *decoder) consume(c byte) bool {
	if d.peek() == c {
		d.i++
		return true
	}
	return false
}

// expect takes c or fails.
func (d *decoder) expect(c byte) {
	if !d.consume(c) {
		d.fail()
	}
}

// literal takes the literal s (true, false, null) if it comes next.
func (d *decoder) literal(s string) bool {
	d.ws()
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

func (d *decoder) null() bool { return d.literal("null") }

// passed passes over the value of a field a PostContent does not have, when decoding one.
func (d *decoder) passed() bool {
	if d.content {
		d.skip()
	}
	return d.content
}

// fields walks an object, calling field with each key (its bytes in the input, valid until the
// next call) once the colon is taken; field must take the value. A key repeated or unknown to
// field (which then calls fail) ends the fast path.
func (d *decoder) fields(field func(key []byte)) {
	d.expect('{')
	if !d.ok || d.consume('}') {
		return
	}
	for d.ok {
		key := d.key()
		d.expect(':')
		if !d.ok {
			return
		}
		field(key)
		if d.consume(',') {
			continue
		}
		d.expect('}')
		return
	}
}

// key reads an object key: plain ASCII without escapes, as every key Herald writes is.
func (d *decoder) key() []byte {
	if d.peek() != '"' {
		d.fail()
		return nil
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			return d.b[start:j]
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			break
		}
	}
	d.fail()
	return nil
}

// seen marks field bit n of an object, failing when it was already seen (encoding/json's
// handling of a repeated key differs by type; such records are left to it).
func (d *decoder) seen(mask *uint32, n uint) {
	if *mask&(1<<n) != 0 {
		d.fail()
		return
	}
	*mask |= 1 << n
}

// str reads a string.
func (d *decoder) str() string {
	if d.peek() != '"' {
		d.fail()
		return ""
	}
	start := d.i + 1
	for j := start; j < len(d.b); {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			return string(d.b[start:j])
		case c == '\\':
			return d.escaped(start, j)
		case c < 0x20:
			d.fail()
			return ""
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRune(d.b[j:])
			if r == utf8.RuneError && size == 1 {
				d.fail() // encoding/json replaces it; left to it
				return ""
			}
			j += size
		}
	}
	d.fail()
	return ""
}

// escaped finishes a string whose first escape is at j.
func (d *decoder) escaped(start, j int) string {
	out := make([]byte, 0, 2*(j-start)+16)
	out = append(out, d.b[start:j]...)
	for j < len(d.b) {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			return string(out)
		case c == '\\':
			if j+1 >= len(d.b) {
				d.fail()
				return ""
			}
			e := d.b[j+1]
			j += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(d.b[j:])
				if !ok || utf16Surrogate(r) {
					d.fail() // pairs and lone surrogates are left to encoding/json
					return ""
				}
				out = utf8.AppendRune(out, r)
				j += 4
			default:
				d.fail()
				return ""
			}
		case c < 0x20:
			d.fail()
			return ""
		case c < utf8.RuneSelf:
			out = append(out, c)
			j++
		default:
			r, size := utf8.DecodeRune(d.b[j:])
			if r == utf8.RuneError && size == 1 {
				d.fail()
				return ""
			}
			out = append(out, d.b[j:j+size]...)
			j += size
		}
	}
	d.fail()
	return ""
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func utf16Surrogate(r rune) bool { return r >= 0xD800 && r < 0xE000 }

// words are the strings a record repeats (statuses, phases, platforms): word returns them
// without allocating.
var words = func() map[string]string {
	m := map[string]string{}
	for _, w := range PostStatuses {
		m[w] = w
	}
	for w := range platformCodes {
		m[w] = w
	}
	for _, w := range []string{TargetPending, TargetPublishing, TargetPublished, TargetFailed, JobQueued, JobProcessing,
		JobCompleted, JobFailed, PhaseUploading, PhaseSuccess, PhaseFailed} {
		m[w] = w
	}
	return m
}()

// word reads a string that is most often one of words.
func (d *decoder) word() string {
	if d.peek() == '"' {
		rest := d.b[d.i+1:]
		// A word has no escape, so a match runs to the string's closing quote.
		if j := bytes.IndexByte(rest, '"'); j >= 0 {
			if w, ok := words[string(rest[:j])]; ok {
				d.i += j + 2
				return w
			}
		}
	}
	return d.str()
}

// strPtr reads a string or null.
func (d *decoder) strPtr() *string {
	if d.null() {
		return nil
	}
	s := d.str()
	return &s
}

// strings reads an array of strings or null (nil); [] is an empty, non-nil slice.
func (d *decoder) strings() []string {
	if d.null() {
		return nil
	}
	d.expect('[')
	out := []string{}
	if !d.ok || d.consume(']') {
		return out
	}
	for d.ok {
		out = append(out, d.str())
		if d.consume(',') {
			continue
		}
		d.expect(']')
		break
	}
	return out
}

// digits reads a JSON integer (an optional minus when neg is allowed); a fraction or exponent
// fails, and so does a value beyond 64 bits.
func (d *decoder) digits(signed bool) (neg bool, v uint64) {
	d.ws()
	if signed && d.i < len(d.b) && d.b[d.i] == '-' {
		neg = true
		d.i++
	}
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		c := uint64(d.b[d.i] - '0')
		if v > (1<<64-1-c)/10 {
			d.fail()
			return false, 0
		}
		v = v*10 + c
		d.i++
	}
	n := d.i - start
	if n == 0 || (n > 1 && d.b[start] == '0') {
		d.fail()
		return false, 0
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			d.fail()
			return false, 0
		}
	}
	return neg, v
}

func (d *decoder) uint64() uint64 {
	_, v := d.digits(false)
	return v
}

func (d *decoder) int() int {
	neg, v := d.digits(true)
	if neg {
		if v > 1<<(strconv.IntSize-1) {
			d.fail()
			return 0
		}
		return int(-v) //nolint:gosec // bounded above
	}
	if v > 1<<(strconv.IntSize-1)-1 {
		d.fail()
		return 0
	}
	return int(v)
}

func (d *decoder) bool() bool {
	switch {
	case d.literal("true"):
		return true
	case d.literal("false"):
		return false
	}
	d.fail()
	return false
}

// time reads a time the way encoding/json does: time.Time.UnmarshalJSON on the quoted literal.
func (d *decoder) time() time.Time {
	var t time.Time
	if d.peek() != '"' {
		d.fail()
		return t
	}
	for j := d.i + 1; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			if err := t.UnmarshalJSON(d.b[d.i : j+1]); err != nil {
				d.fail()
			}
			d.i = j + 1
			return t
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			break
		}
	}
	d.fail()
	return t
}

func (d *decoder) timePtr() *time.Time {
	if d.null() {
		return nil
	}
	t := d.time()
	return &t
}

// skip passes over one JSON value, checking its syntax as encoding/json does, and returns it
// (without the whitespace around it).
func (d *decoder) skip() []byte {
	d.ws()
	start := d.i
	d.skipValue(0)
	if !d.ok {
		return nil
	}
	return d.b[start:d.i]
}

func (d *decoder) skipValue(depth int) {
	if depth > maxSkipDepth {
		d.fail()
		return
	}
	switch d.peek() {
	case '{':
		d.i++
		if d.consume('}') {
			return
		}
		for d.ok {
			if d.peek() != '"' {
				d.fail()
				return
			}
			d.skipString()
			d.expect(':')
			d.skipValue(depth + 1)
			if d.consume(',') {
				continue
			}
			d.expect('}')
			return
		}
	case '[':
		d.i++
		if d.consume(']') {
			return
		}
		for d.ok {
			d.skipValue(depth + 1)
			if d.consume(',') {
				continue
			}
			d.expect(']')
			return
		}
	case '"':
		d.skipString()
	case 't':
		if !d.literal("true") {
			d.fail()
		}
	case 'f':
		if !d.literal("false") {
			d.fail()
		}
	case 'n':
		if !d.literal("null") {
			d.fail()
		}
	default:
		d.skipNumber()
	}
}

// skipString passes over a string: control characters and unknown escapes fail, bytes above
// ASCII pass (encoding/json's scanner accepts invalid UTF-8 and replaces it when decoding).
func (d *decoder) skipString() {
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return
		case c < 0x20:
			d.fail()
			return
		case c == '\\':
			if j+1 >= len(d.b) {
				d.fail()
				return
			}
			switch d.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if _, ok := hex4(d.b[j+2:]); !ok {
					d.fail()
					return
				}
				j += 5
			default:
				d.fail()
				return
			}
		}
	}
	d.fail()
}

// skipNumber passes over a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) skipNumber() {
	b, i := d.b, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		d.fail()
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		n := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == n {
			d.fail()
			return
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		n := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == n {
			d.fail()
			return
		}
	}
	d.i = i
}

// raw reads any value as a json.RawMessage (a copy of its bytes, as encoding/json keeps them).
func (d *decoder) raw() json.RawMessage {
	v := d.skip()
	if !d.ok {
		return nil
	}
	return append(json.RawMessage(nil), v...)
}

// nested reads a value that only some records carry into v with encoding/json.
func (d *decoder) nested(v any) {
	raw := d.skip()
	if !d.ok {
		return
	}
	if err := json.Unmarshal(raw, v); err != nil {
		d.fail()
	}
}

// post decodes a Post.
func (d *decoder) post(p *Post) {
	var mask uint32
	d.fields(func(key []byte) {
		switch string(key) {
		case "id":
			d.seen(&mask, 0)
			if d.passed() {
				return
			}
			p.ID = d.str()
		case "user_id":
			d.seen(&mask, 1)
			p.UserID = d.str()
		case "workspace_id":
			d.seen(&mask, 2)
			p.WorkspaceID = d.str()
		case "content":
			d.seen(&mask, 3)
			p.Content = d.str()
		case "status":
			d.seen(&mask, 4)
			if d.passed() {
				return
			}
			p.Status = d.word()
		case "scheduled_at":
			d.seen(&mask, 5)
			if d.passed() {
				return
			}
			p.ScheduledAt = d.timePtr()
		case "scheduled_zone":
			d.seen(&mask, 6)
			if d.passed() {
				return
			}
			p.ScheduledZone = d.str()
		case "created_at":
			d.seen(&mask, 7)
			if d.passed() {
				return
			}
			p.CreatedAt = d.time()
		case "updated_at":
			d.seen(&mask, 8)
			if d.passed() {
				return
			}
			p.UpdatedAt = d.time()
		case "media_ids":
			d.seen(&mask, 9)
			p.MediaIDs = d.strings()
		case "targets":
			d.seen(&mask, 10)
			p.Targets = d.targets()
		case "version":
			d.seen(&mask, 11)
			if d.passed() {
				return
			}
			p.Version = d.uint64()
		case "tracking_id":
			d.seen(&mask, 12)
			if d.passed() {
				return
			}
			p.TrackingID = d.strPtr()
		case "finished_job":
			d.seen(&mask, 13)
			if d.passed() {
				return
			}
			p.FinishedJob = d.str()
		case "quota_counted":
			d.seen(&mask, 14)
			if d.passed() {
				return
			}
			p.QuotaCounted = d.bool()
		case "campaign_id":
			d.seen(&mask, 15)
			if d.passed() {
				return
			}
			p.CampaignID = d.str()
		case "approval":
			d.seen(&mask, 16)
			if d.passed() {
				return
			}
			d.nested(&p.Approval)
		case "rejection_reason":
			d.seen(&mask, 17)
			if d.passed() {
				return
			}
			p.RejectionReason = d.strPtr()
		case "approval_link":
			d.seen(&mask, 18)
			if d.passed() {
				return
			}
			d.nested(&p.ApprovalLink)
		case "approval_log":
			d.seen(&mask, 19)
			if d.passed() {
				return
			}
			d.nested(&p.ApprovalLog)
		default:
			d.fail()
		}
	})
}

// decodeArray decodes null (nil), or an array whose elements elem decodes in place.
func decodeArray[T any](d *decoder, elem func(*T)) []T {
	if d.null() {
		return nil
	}
	d.expect('[')
	out := make([]T, 0, 4)
	if !d.ok || d.consume(']') {
		return out
	}
	for d.ok {
		var zero T
		out = append(out, zero)
		elem(&out[len(out)-1])
		if d.consume(',') {
			continue
		}
		d.expect(']')
		break
	}
	return out
}

// targets decodes a post's targets: null, or an array of target objects.
func (d *decoder) targets() []Target {
	return decodeArray(d, d.target)
}

func (d *decoder) target(t *Target) {
	var mask uint32
	d.fields(func(key []byte) {
		switch string(key) {
		case "connected_account_id":
			d.seen(&mask, 0)
			if d.passed() {
				return
			}
			t.AccountID = d.str()
		case "platform":
			d.seen(&mask, 1)
			if d.passed() {
				return
			}
			t.Platform = d.word()
		case "status":
			d.seen(&mask, 2)
			if d.passed() {
				return
			}
			t.Status = d.word()
		case "error":
			d.seen(&mask, 3)
			if d.passed() {
				return
			}
			t.Error = d.strPtr()
		case "publication_id":
			d.seen(&mask, 4)
			if d.passed() {
				return
			}
			t.PublicationID = d.str()
		case "url":
			d.seen(&mask, 5)
			if d.passed() {
				return
			}
			t.URL = d.str()
		case "published_at":
			d.seen(&mask, 6)
			if d.passed() {
				return
			}
			t.PublishedAt = d.timePtr()
		case "content":
			d.seen(&mask, 7)
			t.Content = d.strPtr()
		case "media_ids":
			d.seen(&mask, 8)
			if !d.null() {
				ids := d.strings()
				t.MediaIDs = &ids
			}
		case "options":
			d.seen(&mask, 9)
			t.Options = d.raw()
		case "thread":
			d.seen(&mask, 10)
			d.nested(&t.Thread)
		case "first_comment":
			d.seen(&mask, 11)
			d.nested(&t.FirstComment)
		default:
			d.fail()
		}
	})
}

// job decodes a Job.
func (d *decoder) job(j *Job) {
	var mask uint32
	d.fields(func(key []byte) {
		switch string(key) {
		case "tracking_id":
			d.seen(&mask, 0)
			j.TrackingID = d.str()
		case "post_id":
			d.seen(&mask, 1)
			j.PostID = d.str()
		case "user_id":
			d.seen(&mask, 2)
			j.UserID = d.str()
		case "workspace_id":
			d.seen(&mask, 3)
			j.WorkspaceID = d.str()
		case "status":
			d.seen(&mask, 4)
			j.Status = d.word()
		case "targets":
			d.seen(&mask, 5)
			j.Targets = d.jobTargets()
		case "created_at":
			d.seen(&mask, 6)
			j.CreatedAt = d.time()
		case "completed_at":
			d.seen(&mask, 7)
			j.CompletedAt = d.timePtr()
		case "seq":
			d.seen(&mask, 8)
			j.Seq = d.uint64()
		case "post_synced":
			d.seen(&mask, 9)
			j.PostSynced = d.bool()
		case "campaign_id":
			d.seen(&mask, 10)
			j.CampaignID = d.str()
		default:
			d.fail()
		}
	})
}

func (d *decoder) jobTargets() []JobTarget {
	return decodeArray(d, d.jobTarget)
}

func (d *decoder) jobTarget(t *JobTarget) {
	var mask uint32
	d.fields(func(key []byte) {
		switch string(key) {
		case "target":
			d.seen(&mask, 0)
			t.Target = d.int()
		case "platform":
			d.seen(&mask, 1)
			t.Platform = d.word()
		case "connected_account_id":
			d.seen(&mask, 2)
			t.AccountID = d.str()
		case "phase":
			d.seen(&mask, 3)
			t.Phase = d.word()
		case "message":
			d.seen(&mask, 4)
			t.Message = d.str()
		case "publication_id":
			d.seen(&mask, 5)
			t.PublicationID = d.str()
		case "url":
			d.seen(&mask, 6)
			t.URL = d.str()
		case "parts":
			d.seen(&mask, 7)
			d.nested(&t.Parts)
		case "comment":
			d.seen(&mask, 8)
			d.nested(&t.Comment)
		default:
			d.fail()
		}
	})
}
