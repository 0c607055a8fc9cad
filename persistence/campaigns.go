package persistence

import (
	"bytes"
	"encoding/binary"
	"time"
)

// Campaign publish modes: what a campaign does with its posts when it is created.
const (
	CampaignNow      = "now"
	CampaignSchedule = "schedule"
	CampaignDraft    = "draft"
)

// Campaign is a batch of posts submitted together (POST /v1/campaigns). Its posts are ordinary
// posts that carry its id (Post.CampaignID); what the campaign adds is a name, the posts' index
// with their statuses, the counts of its posts per status, and one timeline of every target of
// every post (campaign_events), which its stream follows.
type Campaign struct {
	ID     string `json:"id"`
	UserID string `json:"user_id"`
	// WorkspaceID is the workspace it belongs to ("" for its user's main workspace; Scope).
	WorkspaceID string `json:"workspace_id,omitempty"`
	Name        string `json:"name,omitempty"`
	// Publish is the mode it was created with: CampaignNow, CampaignSchedule or CampaignDraft.
	Publish string `json:"publish"`
	// Posts is how many posts it was created with.
	Posts     int       `json:"posts"`
	CreatedAt time.Time `json:"created_at"`
	// CancelledAt is set by DELETE /v1/campaigns/:id when posts that could not be cancelled
	// (publishing or final) keep the campaign.
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
	// Version counts the campaign's committed changes.
	Version uint64 `json:"version"`
}

// CampaignEvent is one step of one target of a campaign's post: a job's phase change, as the
// campaign's stream sends it. Seq numbers a campaign's events from 1; it is the key, not part
// of the stored value.
type CampaignEvent struct {
	Seq        uint64    `json:"-"`
	PostID     string    `json:"post_id"`
	TrackingID string    `json:"tracking_id"`
	Target     int       `json:"target"`
	Platform   string    `json:"platform"`
	AccountID  string    `json:"connected_account_id"`
	Phase      string    `json:"phase"`
	Message    string    `json:"message"`
	At         time.Time `json:"at"`
}

// The campaign buckets:
//
//	campaigns        campaign id → Campaign (JSON)
//	campaigns_user   user id | campaign id → empty
//	campaign_posts   campaign id | post id → the post's status code (1 byte)
//	campaign_counts  campaign id → its posts per status: 8 uint32 cells, big-endian (0: every
//	                 post, 1..7: the status codes); a record written before pending_approval
//	                 has 7 cells, read with the 8th as 0
//	campaign_events  campaign id | seq (8) → CampaignEvent (JSON)
//
// campaign_posts and campaign_counts are kept by PutPost and DeletePost, in the transactions that
// change the posts, so that a campaign's totals and whether any of its posts is still open
// (scheduled or publishing) cost one read. The job actor appends campaign_events in the
// transaction of the change it records.
var (
	bCampaigns      = []byte("campaigns")
	bCampaignsUser  = []byte("campaigns_user")
	bCampaignPosts  = []byte("campaign_posts")
	bCampaignCounts = []byte("campaign_counts")
	bCampaignEvents = []byte("campaign_events")
)

func init() {
	registerBuckets(bCampaigns, bCampaignsUser, bCampaignPosts, bCampaignCounts, bCampaignEvents)
}

const campaignCells = 1 + 7 // every post, then each status code 1..7

// oldCampaignCells is the length of a counts record written before pending_approval existed.
const oldCampaignCells = 1 + 6

// CampaignCounts are a campaign's posts per status.
type CampaignCounts struct {
	cells [campaignCells]int
}

// Total is how many posts the campaign has.
func (c CampaignCounts) Total() int { return c.cells[0] }

// Of is how many of its posts have the status.
func (c CampaignCounts) Of(status string) int {
	s := statusCode(status)
	if s == 0 || int(s) >= campaignCells {
		return 0
	}
	return c.cells[s]
}

// Open is how many of its posts are still to be decided: scheduled, publishing or waiting for
// approval.
func (c CampaignCounts) Open() int {
	return c.Of(PostScheduled) + c.Of(PostPublishing) + c.Of(PostPendingApproval)
}

func decodeCampaignCounts(v []byte) CampaignCounts {
	var c CampaignCounts
	if len(v) != campaignCells*4 && len(v) != oldCampaignCells*4 {
		return c
	}
	for i := range len(v) / 4 {
		c.cells[i] = int(binary.BigEndian.Uint32(v[i*4:]))
	}
	return c
}

func (c CampaignCounts) encode() []byte {
	b := make([]byte, campaignCells*4)
	for i, n := range c.cells {
		binary.BigEndian.PutUint32(b[i*4:], uint32(max(0, n)))
	}
	return b
}

// moveCampaignPost moves a post of a campaign from status code old to status code new (0: none)
// in the campaign's index and counts.
func (t *Tx) moveCampaignPost(campaignID, postID []byte, old, new byte) error {
	if old == new {
		return nil
	}
	t.touch(topicCampaign, campaignID)
	counts := t.kv.Bucket(bCampaignCounts)
	c := decodeCampaignCounts(t.peek(counts, campaignID)) // counts: a quiet read (peek)
	if old != 0 {
		c.cells[0]--
		if int(old) < campaignCells {
			c.cells[old]--
		}
	}
	index, key := t.kv.Bucket(bCampaignPosts), join(campaignID, postID)
	if new != 0 {
		c.cells[0]++
		if int(new) < campaignCells {
			c.cells[new]++
		}
		if err := index.Put(key, []byte{new}); err != nil {
			return err
		}
	} else if err := index.Delete(key); err != nil {
		return err
	}
	return counts.Put(campaignID, c.encode())
}

// PutCampaign stores a campaign and its entry in the user's index.
func (t *Tx) PutCampaign(c *Campaign) error {
	id := mustID(c.ID)
	if err := t.kv.Bucket(bCampaignsUser).Put(join(mustID(c.Scope()), id), nil); err != nil {
		return err
	}
	return t.put(bCampaigns, id, c)
}

// HasCampaign reports whether a campaign id is stored.
func (t *Tx) HasCampaign(id string) bool {
	return t.kv.Bucket(bCampaigns).Get(mustID(id)) != nil
}

// Campaign returns a campaign by id.
func (t *Tx) Campaign(id string) (*Campaign, error) {
	var c Campaign
	if err := t.get(bCampaigns, mustID(id), &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// CampaignCounts returns a campaign's posts per status. The read is quiet (peek): missing counts
// are zeros, which leave every post closed, the case that reads most.
func (t *Tx) CampaignCounts(id string) CampaignCounts {
	return decodeCampaignCounts(t.peek(t.kv.Bucket(bCampaignCounts), mustID(id)))
}

// CampaignPost is a post of a campaign as its index holds it.
type CampaignPost struct {
	PostID string
	Status string
}

// CampaignPosts lists a campaign's posts with their statuses, in post id (creation) order.
func (t *Tx) CampaignPosts(id string) []CampaignPost {
	prefix := mustID(id)
	var out []CampaignPost
	c := t.kv.Bucket(bCampaignPosts).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != 32 || len(v) != 1 {
			continue
		}
		status := ""
		if int(v[0]) >= 1 && int(v[0]) <= len(PostStatuses) {
			status = PostStatuses[v[0]-1]
		}
		out = append(out, CampaignPost{PostID: idString(k[16:]), Status: status})
	}
	return out
}

// ListCampaigns returns one page of a workspace's campaigns (scope: Scope), newest first, and how many there are.
func (t *Tx) ListCampaigns(scope string, offset, limit int) ([]*Campaign, int, error) {
	user := mustID(scope)
	c := t.kv.Bucket(bCampaignsUser).Cursor()
	end := append(append([]byte(nil), user...), bytes.Repeat([]byte{0xff}, 16)...)
	k, _ := c.Seek(end)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	var out []*Campaign
	total := 0
	for ; k != nil && bytes.HasPrefix(k, user); k, _ = c.Prev() {
		if len(k) != 32 {
			continue
		}
		total++
		if total <= offset || len(out) >= limit {
			continue
		}
		var camp Campaign
		if err := t.get(bCampaigns, k[16:], &camp); err != nil {
			return nil, 0, err
		}
		out = append(out, &camp)
	}
	return out, total, nil
}

func campaignEventKey(campaignID []byte, seq uint64) []byte {
	k := make([]byte, 24)
	copy(k, campaignID)
	binary.BigEndian.PutUint64(k[16:], seq)
	return k
}

// lastCampaignSeq is the seq of a campaign's newest event (0: none).
func (t *Tx) lastCampaignSeq(campaignID []byte) uint64 {
	c := t.kv.Bucket(bCampaignEvents).Cursor()
	k, _ := c.Seek(campaignEventKey(campaignID, 1<<64-1))
	if k == nil {
		k, _ = c.Last()
	} else if !bytes.Equal(k, campaignEventKey(campaignID, 1<<64-1)) {
		k, _ = c.Prev()
	}
	if k == nil || len(k) != 24 || !bytes.HasPrefix(k, campaignID) {
		return 0
	}
	return binary.BigEndian.Uint64(k[16:])
}

// AppendCampaignEvents appends events to a campaign's timeline, numbering them after its newest;
// the events' Seq fields are set.
func (t *Tx) AppendCampaignEvents(campaignID string, evs []CampaignEvent) error {
	id := mustID(campaignID)
	t.touch(topicCampaign, id)
	seq := t.lastCampaignSeq(id)
	b := t.kv.Bucket(bCampaignEvents)
	for i := range evs {
		seq++
		evs[i].Seq = seq
		raw, err := Encode(&evs[i])
		if err != nil {
			return err
		}
		if err := b.Put(campaignEventKey(id, seq), raw); err != nil {
			return err
		}
	}
	return nil
}

// CampaignEventsAfter returns up to limit events of a campaign numbered after seq, oldest first.
func (t *Tx) CampaignEventsAfter(campaignID string, after uint64, limit int) ([]CampaignEvent, error) {
	id := mustID(campaignID)
	var out []CampaignEvent
	c := t.kv.Bucket(bCampaignEvents).Cursor()
	for k, v := c.Seek(campaignEventKey(id, after+1)); k != nil && bytes.HasPrefix(k, id) && len(out) < limit; k, v = c.Next() {
		var e CampaignEvent
		if err := Decode(v, &e); err != nil {
			return nil, err
		}
		e.Seq = binary.BigEndian.Uint64(k[16:])
		out = append(out, e)
	}
	return out, nil
}

// DeleteCampaign removes a campaign: its record, its index entries, its counts and its
// timeline. Its posts are not touched (the caller deletes a campaign that has none left).
func (t *Tx) DeleteCampaign(c *Campaign) error {
	id := mustID(c.ID)
	t.touch(topicCampaign, id)
	for _, bucket := range [][]byte{bCampaignPosts, bCampaignEvents} {
		b := t.kv.Bucket(bucket)
		var dead [][]byte
		cur := b.Cursor()
		for k, _ := cur.Seek(id); k != nil && bytes.HasPrefix(k, id); k, _ = cur.Next() {
			dead = append(dead, append([]byte(nil), k...))
		}
		for _, k := range dead {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
	}
	if err := t.kv.Bucket(bCampaignCounts).Delete(id); err != nil {
		return err
	}
	if err := t.kv.Bucket(bCampaignsUser).Delete(join(mustID(c.Scope()), id)); err != nil {
		return err
	}
	return t.kv.Bucket(bCampaigns).Delete(id)
}
