package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"time"
)

// Job statuses.
const (
	JobQueued     = "queued"
	JobProcessing = "processing"
	JobCompleted  = "completed"
	JobFailed     = "failed"
)

// Target phases of a job.
const (
	PhaseUploading = "platform_uploading"
	PhaseSuccess   = "platform_success"
	PhaseFailed    = "platform_failed"
)

// JobTarget is where one target of a job stands.
type JobTarget struct {
	// Target is the index of the target in the post's targets.
	Target    int    `json:"target"`
	Platform  string `json:"platform"`
	AccountID string `json:"connected_account_id"`
	Phase     string `json:"phase"`
	Message   string `json:"message"`
	// PublicationID and URL identify the post on the network once published.
	PublicationID string `json:"publication_id,omitempty"`
	URL           string `json:"url,omitempty"`
	// Parts are the thread parts published so far, in order (the post itself is PublicationID);
	// Comment is the first comment's outcome once its step was made.
	Parts   []Step        `json:"parts,omitempty"`
	Comment *FirstComment `json:"comment,omitempty"`
}

// Final reports whether the target's outcome is known.
func (t JobTarget) Final() bool { return t.Phase == PhaseSuccess || t.Phase == PhaseFailed }

// Job is a publish job: one post to some of its targets.
type Job struct {
	TrackingID string `json:"tracking_id"`
	PostID     string `json:"post_id"`
	UserID     string `json:"user_id"`
	// WorkspaceID is the workspace it belongs to ("" for its user's main workspace; Scope).
	WorkspaceID string      `json:"workspace_id,omitempty"`
	Status      string      `json:"status"`
	Targets     []JobTarget `json:"targets"`
	CreatedAt   time.Time   `json:"created_at"`
	CompletedAt *time.Time  `json:"completed_at"`
	// Seq numbers the job's changes; the SSE stream uses it as event id.
	Seq uint64 `json:"seq"`
	// PostSynced is set once the post has taken the job's outcome; until then the job is active
	// and is resumed at start-up. The post's commit of the outcome settles the job
	// (Tx.SettleJob) without rewriting it: a stored job that is finished and no longer active
	// has post_synced false and is settled all the same.
	PostSynced bool `json:"post_synced"`
	// CampaignID is the campaign of the job's post ("" for none): the job records its targets'
	// steps in the campaign's timeline too.
	CampaignID string `json:"campaign_id,omitempty"`
}

// Counts returns how many targets succeeded and failed.
func (j *Job) Counts() (completed, failed int) {
	for _, t := range j.Targets {
		switch t.Phase {
		case PhaseSuccess:
			completed++
		case PhaseFailed:
			failed++
		}
	}
	return completed, failed
}

// Clone returns a deep copy.
func (j *Job) Clone() *Job {
	c := *j
	c.Targets = append([]JobTarget(nil), j.Targets...)
	return &c
}

// Buckets of the publishing runtime:
//
//	jobs          tracking id → Job (JSON)
//	jobs_active   tracking id → empty: jobs whose post has not taken their outcome
//	jobs_post     post id | tracking id → empty
//	schedule      due time (unix nanoseconds, 8 bytes) | post id → empty
//	idempotency   SHA-256 of user | route | key → IdempotencyRecord (JSON)
//	quota         user id | "YYYY-MM" → posts counted (8 bytes)
var (
	bJobs        = []byte("jobs")
	bJobsActive  = []byte("jobs_active")
	bJobsPost    = []byte("jobs_post")
	bSchedule    = []byte("schedule")
	bIdempotency = []byte("idempotency")
	bQuota       = []byte("quota")
)

func init() { registerBuckets(bJobs, bJobsActive, bJobsPost, bSchedule, bIdempotency, bQuota) }

// PutJob stores a job; an unsynced job is active.
func (t *Tx) PutJob(j *Job) error { return t.PutJobEncoded(j, nil) }

// PutJobEncoded stores a job the caller encoded with Encode (outside the transaction that many
// writers share); nil raw encodes it here. It keeps the job's indexes: jobs_active (flagged once
// the job is finished, so that a start-up finds the finished jobs to hand to their posts without
// decoding every active job), jobs_post, and jobs_waiting, where a new job's targets wait for
// their accounts and a target's entry goes in the transaction that stores its outcome
// (waiting.go).
func (t *Tx) PutJobEncoded(j *Job, raw []byte) error {
	if raw == nil {
		var err error
		if raw, err = Encode(j); err != nil {
			return err
		}
	}
	id := mustID(j.TrackingID)
	t.touch(topicJob, id)
	// The index entries are written once: a phase change finds them in place, and an index
	// page left untouched is a page the commit need not write. Their reads are quiet (peek):
	// finding an entry only spares a write and the count's read.
	active := t.kv.Bucket(bJobsActive)
	switch {
	case j.PostSynced:
		if err := t.unsetActive(active, id); err != nil {
			return err
		}
	case j.finished():
		if v := t.peek(active, id); len(v) == 0 || v[0] != activeFinished {
			if len(v) == 0 && !t.peekHas(active, id) {
				if err := t.countActiveJobs(1); err != nil {
					return err
				}
			}
			if err := active.Put(id, []byte{activeFinished}); err != nil {
				return err
			}
		}
	case !t.peekHas(active, id):
		if err := t.countActiveJobs(1); err != nil {
			return err
		}
		if err := active.Put(id, nil); err != nil {
			return err
		}
	}
	byPost, key := t.kv.Bucket(bJobsPost), join(mustID(j.PostID), id)
	isNew := !t.peekHas(byPost, key)
	if isNew {
		if err := byPost.Put(key, nil); err != nil {
			return err
		}
	}
	if err := t.keepWaiting(j, isNew); err != nil {
		return err
	}
	return t.kv.Bucket(bJobs).Put(id, raw)
}

// activeFinished is the value of a jobs_active entry whose job is finished (its post has still
// to take the outcome); an unfinished job's entry is empty.
const activeFinished = 1

func (j *Job) finished() bool { return j.Status == JobCompleted || j.Status == JobFailed }

// SettleJob takes a finished job out of the jobs to resume: its post stored the outcome in this
// transaction. The job's own record keeps post_synced false; a job that is finished and not
// active is settled (JobActive).
func (t *Tx) SettleJob(id string) error {
	return t.unsetActive(t.kv.Bucket(bJobsActive), mustID(id))
}

// unsetActive removes a job's jobs_active entry, if there is one, and counts it out. A probe
// reading ahead without the entry's answer goes on as if it were there, so that the count's row
// is read ahead too and the entry's read is quiet (peek).
func (t *Tx) unsetActive(active kvBucket, id []byte) error {
	if !t.peekHas(active, id) && !t.guessing(bJobsActive, id) {
		return nil
	}
	if err := t.countActiveJobs(-1); err != nil {
		return err
	}
	return active.Delete(id)
}

// activeJobsKey, in meta, counts the entries of jobs_active (layout 5), kept in the transactions
// that add and remove them: the job gauges read it instead of walking the index, which a backlog
// of a million jobs makes a walk of a million entries, every page of it mapped into memory.
var activeJobsKey = []byte("jobs_active_count")

// countActiveJobs adds d to the count of jobs_active's entries.
func (t *Tx) countActiveJobs(d int64) error {
	meta := t.kv.Bucket(bMeta)
	n := int64(0)
	if v := t.peek(meta, activeJobsKey); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	return meta.Put(activeJobsKey, u64(uint64(max(0, n+d))))
}

// activeJobsCount reads the count of jobs_active's entries (false: not counted, a store not yet
// brought to layout 5).
func activeJobsCount(tx kvTx) (int, bool) {
	meta := tx.Bucket(bMeta)
	if meta == nil {
		return 0, false
	}
	if v := meta.Get(activeJobsKey); len(v) == 8 {
		return int(binary.BigEndian.Uint64(v)), true
	}
	return 0, false
}

// JobActive reports whether the job is among the jobs to resume.
func (t *Tx) JobActive(id string) bool {
	return has(t.kv.Bucket(bJobsActive), mustID(id))
}

// has reports whether the bucket holds key (Get cannot tell an empty value from no key).
func has(b kvBucket, key []byte) bool { return b.Has(key) }

// Job returns a job by tracking id.
func (t *Tx) Job(id string) (*Job, error) {
	var j Job
	if err := t.get(bJobs, mustID(id), &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// JobKept returns a job by tracking id like Job, but kept itself when the store holds exactly raw,
// the bytes kept was stored as (Encode's), so that a job its reader was handed as its writer
// committed it is not decoded again; whatever changed it since (another write, anywhere) makes
// the stored bytes differ, and the stored job is decoded as Job does. The caller owns neither:
// kept is returned as it is.
func (t *Tx) JobKept(id string, kept *Job, raw []byte) (*Job, error) {
	b := t.kv.Bucket(bJobs).Get(mustID(id))
	if b == nil {
		return nil, ErrNotFound
	}
	if kept != nil && bytes.Equal(b, raw) {
		return kept, nil
	}
	var j Job
	if err := Decode(b, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// JobStoredAs reports whether the store holds the job under id as exactly raw (Encode's bytes
// of it): a write that took a job as it was kept, without reading it, makes itself conditional
// on it in its own transaction, and whatever changed the job since (another write, anywhere,
// or its deletion) makes it false.
func (t *Tx) JobStoredAs(id string, raw []byte) bool { return t.storedAs(bJobs, id, raw) }

// storedAs reports whether bucket holds the record under id as exactly raw. The read is quiet
// (peek): the answer is compared, and decides no read.
func (t *Tx) storedAs(bucket []byte, id string, raw []byte) bool {
	b := t.peek(t.kv.Bucket(bucket), mustID(id))
	return b != nil && bytes.Equal(b, raw)
}

// ActiveJobs lists the tracking ids of jobs to resume.
func (t *Tx) ActiveJobs() []string {
	var out []string
	c := t.kv.Bucket(bJobsActive).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		out = append(out, idString(k))
	}
	return out
}

// FinishedActiveJobs lists, after the tracking id after ("" for the first), up to limit jobs that
// are finished but whose post has not taken the outcome: a start-up hands them to their posts.
// It reads the jobs_active index only.
func (t *Tx) FinishedActiveJobs(after string, limit int) []string {
	var out []string
	c := t.kv.Bucket(bJobsActive).Cursor()
	var k, v []byte
	if after == "" {
		k, v = c.First()
	} else {
		start := mustID(after)
		if k, v = c.Seek(start); k != nil && bytes.Equal(k, start) {
			k, v = c.Next()
		}
	}
	for ; k != nil && len(out) < limit; k, v = c.Next() {
		if len(v) > 0 && v[0] == activeFinished {
			out = append(out, idString(k))
		}
	}
	return out
}

// ---- schedule ----

func scheduleKey(at time.Time, postID string) []byte {
	k := make([]byte, 24)
	binary.BigEndian.PutUint64(k, uint64(at.UnixNano()))
	copy(k[8:], mustID(postID))
	return k
}

// Schedule adds a post to the schedule index at at.
func (t *Tx) Schedule(postID string, at time.Time) error {
	return t.kv.Bucket(bSchedule).Put(scheduleKey(at, postID), nil)
}

// IsScheduled reports whether the schedule holds the post's entry at at.
func (t *Tx) IsScheduled(postID string, at time.Time) bool {
	return t.kv.Bucket(bSchedule).Get(scheduleKey(at, postID)) != nil
}

// Unschedule removes a post's entry at at.
func (t *Tx) Unschedule(postID string, at time.Time) error {
	return t.kv.Bucket(bSchedule).Delete(scheduleKey(at, postID))
}

// Due is one entry of the schedule.
type Due struct {
	PostID string
	At     time.Time
}

// DueBefore lists up to limit scheduled posts due before until, earliest first, after the entry
// after (zero Due: from the start).
func (t *Tx) DueBefore(until time.Time, after Due, limit int) []Due {
	c := t.kv.Bucket(bSchedule).Cursor()
	var k []byte
	if after.PostID == "" {
		k, _ = c.First()
	} else {
		start := scheduleKey(after.At, after.PostID)
		k, _ = c.Seek(start)
		if k != nil && bytes.Equal(k, start) {
			k, _ = c.Next()
		}
	}
	end := uint64(until.UnixNano())
	var out []Due
	for ; k != nil && len(out) < limit; k, _ = c.Next() {
		at := binary.BigEndian.Uint64(k[:8])
		if at >= end {
			break
		}
		out = append(out, Due{PostID: idString(k[8:]), At: time.Unix(0, int64(at)).UTC()})
	}
	return out
}

// ScheduledIn lists up to limit of a workspace's (scope: Scope) scheduled posts due at or after
// from, soonest first. It walks the schedule, which holds every workspace's posts, and looks
// each entry up in the workspace's index without reading the post; it stops after scan entries,
// so that a store whose other workspaces schedule far more bounds the walk (what was found by
// then is returned).
func (t *Tx) ScheduledIn(scope string, from time.Time, limit, scan int) []Due {
	return t.scheduledBetween(mustID(scope), from, math.MaxInt64, limit, scan)
}

// scheduledBetween is ScheduledIn for entries due before until (Unix nanoseconds).
func (t *Tx) scheduledBetween(user []byte, from time.Time, until int64, limit, scan int) []Due {
	index := t.kv.Bucket(bPostsUser)
	c := t.kv.Bucket(bSchedule).Cursor()
	start := make([]byte, 8)
	binary.BigEndian.PutUint64(start, uint64(max(from.UnixNano(), 0)))
	var out []Due
	n := 0
	for k, _ := c.Seek(start); k != nil && len(out) < limit && n < scan; k, _ = c.Next() {
		n++
		at := binary.BigEndian.Uint64(k[:8])
		if at >= uint64(until) {
			break
		}
		if len(k) != 24 || index.Get(join(user, k[8:])) == nil {
			continue
		}
		out = append(out, Due{PostID: idString(k[8:]), At: time.Unix(0, int64(at)).UTC()})
	}
	return out
}

// CalendarPosts returns a workspace's posts (scope: Scope) that a calendar of [from, to) may
// show: the scheduled posts due in it, from the schedule; and, from the list index newest
// first, the posts waiting for approval, publishing, published, partly published or failed.
// A post goes out after it is made and its id holds when it was made (UUIDv7), so posts made at
// or after to are passed over unread, as are drafts and scheduled posts (by the index's
// status); at most scan posts are read. The caller places each post by its own time.
func (t *Tx) CalendarPosts(scope string, from, to time.Time, scan int) ([]*Post, error) {
	user := mustID(scope)
	var out []*Post
	for _, d := range t.scheduledBetween(user, from, to.UnixNano(), scan, math.MaxInt) {
		p, err := t.Post(d.PostID)
		if err != nil {
			continue // deleted since it was scheduled
		}
		out = append(out, p)
	}
	want := [...]byte{statusCode(PostPendingApproval), statusCode(PostPublishing), statusCode(PostPublished),
		statusCode(PostPartial), statusCode(PostFailed)}
	toMs := uint64(to.UnixMilli())
	posts := t.kv.Bucket(bPosts)
	c := t.kv.Bucket(bPostsUser).Cursor()
	end := append(append([]byte(nil), user...), bytes.Repeat([]byte{0xff}, 16)...)
	var k, v []byte
	if k, _ = c.Seek(end); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	read := 0
	for ; k != nil && bytes.HasPrefix(k, user) && read < scan; k, v = c.Prev() {
		if len(k) != 32 || len(v) != 3 || !slices.Contains(want[:], v[0]) {
			continue
		}
		id := k[16:]
		if id[6]>>4 == 7 && uint64(id[0])<<40|uint64(id[1])<<32|uint64(id[2])<<24|uint64(id[3])<<16|uint64(id[4])<<8|uint64(id[5]) >= toMs {
			continue // made after the range: it went out after it too
		}
		raw := posts.Get(id)
		if raw == nil {
			continue
		}
		read++
		var p Post
		if err := Decode(raw, &p); err != nil {
			return nil, err
		}
		out = append(out, &p)
	}
	return out, nil
}

// NextDue returns the earliest scheduled entry, if any.
func (t *Tx) NextDue() (Due, bool) {
	k, _ := t.kv.Bucket(bSchedule).Cursor().First()
	if k == nil {
		return Due{}, false
	}
	return Due{PostID: idString(k[8:]), At: time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))).UTC()}, true
}

// ---- idempotency ----

// IdempotencyRecord is the answer given to the first request with an Idempotency-Key.
type IdempotencyRecord struct {
	Fingerprint []byte    `json:"fingerprint"` // SHA-256 of the request body
	Status      int       `json:"status"`
	Body        []byte    `json:"body"`
	Location    string    `json:"location,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// IdempotencyRetention is how long an Idempotency-Key's answer is kept and replayed: a key whose
// answer is older is free again.
const IdempotencyRetention = 24 * time.Hour

// LiveAt reports whether the answer still holds its key at t: it is no older than
// IdempotencyRetention. A request with the key at t is answered with it, never carried out again.
func (r *IdempotencyRecord) LiveAt(t time.Time) bool {
	return t.Sub(r.CreatedAt) <= IdempotencyRetention
}

// ErrIdempotencyKeyUsed refuses a write that would store the answer of an Idempotency-Key whose
// answer is already stored (ClaimIdempotency): another request with the key was carried out
// first, and this one must be answered with that answer, not carried out again.
var ErrIdempotencyKeyUsed = errors.New("persistence: the Idempotency-Key already has an answer")

// PutIdempotency stores the answer for a key (key is already the hash of user, route and key).
func (t *Tx) PutIdempotency(key []byte, r *IdempotencyRecord) error {
	return t.put(bIdempotency, key, r)
}

// ClaimIdempotency stores the answer for a key in the transaction that carries out the key's
// request, unless the key already has an answer younger than IdempotencyRetention (counted to
// r.CreatedAt): then ErrIdempotencyKeyUsed, and the caller's transaction must store nothing.
// The check before a request is carried out (a replay of the stored answer) cannot see a first
// request still on its way, one whose client gave up on it (a time-out, a 503 while its node was
// unreachable) and sent it again, on this node or another: the first of the two transactions to
// commit claims the key, and the other is refused here. On PostgreSQL the read and the write are
// in one serializable transaction, so two claims that overlap cannot both commit.
func (t *Tx) ClaimIdempotency(key []byte, r *IdempotencyRecord) error {
	// A record that cannot be read is taken as none, as ExpireIdempotency takes it.
	if old, err := t.Idempotency(key); err == nil && old.LiveAt(r.CreatedAt) {
		return ErrIdempotencyKeyUsed
	}
	return t.PutIdempotency(key, r)
}

// Idempotency returns the stored answer for a key.
func (t *Tx) Idempotency(key []byte) (*IdempotencyRecord, error) {
	var r IdempotencyRecord
	if err := t.get(bIdempotency, key, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ExpireIdempotency deletes records created before cutoff and reports how many.
func (t *Tx) ExpireIdempotency(cutoff time.Time, limit int) (int, error) {
	b := t.kv.Bucket(bIdempotency)
	c := b.Cursor()
	var dead [][]byte
	for k, v := c.First(); k != nil && len(dead) < limit; k, v = c.Next() {
		var r IdempotencyRecord
		if err := Decode(v, &r); err != nil || r.CreatedAt.Before(cutoff) {
			dead = append(dead, append([]byte(nil), k...))
		}
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(dead), nil
}

// ---- free-plan quota ----

func quotaKey(userID, month string) []byte {
	return append(appendID(make([]byte, 0, 16+len(month)), userID), month...)
}

// QuotaUsed returns how many posts the user published or scheduled in month ("2006-01").
func (t *Tx) QuotaUsed(userID, month string) int {
	v := t.peek(t.kv.Bucket(bQuota), quotaKey(userID, month)) // a count: a quiet read (peek)
	if len(v) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(v))
}

// AddQuota counts n more posts in month.
func (t *Tx) AddQuota(userID, month string, n int) error {
	return t.kv.Bucket(bQuota).Put(quotaKey(userID, month), u64(uint64(t.QuotaUsed(userID, month)+n)))
}
