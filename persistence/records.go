package persistence

import (
	"encoding/json"
	"time"
)

// User is a Herald user.
type User struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Name      *string   `json:"name"`
	Image     *string   `json:"image"`
	Plan      string    `json:"plan"`
	Timezone  string    `json:"timezone"`
	CreatedAt time.Time `json:"created_at"`
	// Sandbox marks the demo user created by sandbox mode.
	Sandbox bool `json:"sandbox,omitempty"`
}

// APIKey is an API key's record. The raw key is never stored: Hash is its SHA-256.
type APIKey struct {
	ID        string     `json:"id"`
	UserID    string     `json:"user_id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	Hash      []byte     `json:"hash"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	// LastUsedAt is the key's last use as last flushed (http/auth: uses are coalesced in
	// memory and written at most once a minute per key).
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	// Kind is KeyKindStandard ("", a key made by its owner) or KeyKindConnector: the key behind
	// an OAuth grant (persistence/oauth.go), made when its owner approved a connector; its
	// secret is never shown to anyone, it is the grant's revocation handle.
	Kind string `json:"kind,omitempty"`
	// ClientID is the OAuth client of a connector key.
	ClientID string `json:"client_id,omitempty"`
	// WorkspaceID binds the key to one workspace (MainWorkspace or a workspace's id): every
	// request it makes acts there, and naming another is refused. "" is a key of every workspace,
	// acting in main unless the request names one.
	WorkspaceID string `json:"workspace_id,omitempty"`
	// Scopes limit a standard key to these scopes (http/auth: the OAuth scope names and
	// posts:approve); none is full access.
	Scopes []string `json:"scopes,omitempty"`
}

// API key kinds.
const (
	KeyKindStandard  = ""
	KeyKindConnector = "connector"
)

// Account is a connected social account.
type Account struct {
	ID     string `json:"id"`
	UserID string `json:"user_id"`
	// WorkspaceID is the workspace it belongs to ("" for its user's main workspace; Scope).
	WorkspaceID     string  `json:"workspace_id,omitempty"`
	Platform        string  `json:"platform"`
	Username        *string `json:"username"`
	ProfileImageURL *string `json:"profile_image_url"`
	IsActive        bool    `json:"is_active"`
	// TokenExpiresAt is when the access token expires (nil: it does not, or the network did not
	// say).
	TokenExpiresAt *time.Time `json:"token_expires_at"`
	// Refreshes says that Herald renews the access token with a refresh token (or session) it
	// holds, so that the access token's expiry asks nothing of the user.
	Refreshes bool `json:"refreshes,omitempty"`
	// RefreshExpiresAt is when that refresh token stops working, when the network says.
	RefreshExpiresAt *time.Time `json:"refresh_expires_at,omitempty"`
	// ReconnectAt is when Herald found that the account's token cannot be renewed (the network
	// refused the refresh, or refused a freshly refreshed token: revoked, consent withdrawn), and
	// ReconnectReason why; the user must connect the account again. New credentials clear both.
	ReconnectAt     *time.Time `json:"reconnect_at,omitempty"`
	ReconnectReason string     `json:"reconnect_reason,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	// NetworkUserID is the network's id of the account (one account per user and network user):
	// for a LinkedIn organisation the organisation's id, for a Facebook Page the Page's.
	NetworkUserID string `json:"network_user_id,omitempty"`
	// Kind is what the account is on its network (AccountProfile, AccountOrganization,
	// AccountPage, AccountChannel). Records written before accounts had kinds have none: read it
	// with KindOf, which answers the kind such an account always was.
	Kind string `json:"kind,omitempty"`
	// DisplayName is the account's name as its network shows it (a person's, organisation's,
	// Page's or channel's name); nil when the network named none.
	DisplayName *string `json:"display_name,omitempty"`
	// Secret holds the encrypted credentials (AES-GCM, sealed by the caller).
	Secret []byte `json:"secret,omitempty"`
	// DefaultOptions are the network options a target of the account gets when it gives none
	// (compact JSON of platforms' options type for the account's network).
	DefaultOptions json.RawMessage `json:"default_options,omitempty"`
}

// Post statuses.
const (
	PostDraft      = "draft"
	PostScheduled  = "scheduled"
	PostPublishing = "publishing"
	PostPublished  = "published"
	PostPartial    = "partial"
	PostFailed     = "failed"
	// PostPendingApproval is a post whose publish or schedule waits for someone who may approve
	// it (Post.Approval keeps what was asked); nothing publishes it until then.
	PostPendingApproval = "pending_approval"
)

// PostStatuses lists every post status, in the order of their codes (a new status is appended:
// the codes are stored in posts_user, posts_count and campaign_posts).
var PostStatuses = []string{PostDraft, PostScheduled, PostPublishing, PostPublished, PostPartial, PostFailed, PostPendingApproval}

// Target statuses: where one post stands on one connected account.
const (
	TargetPending    = "pending"
	TargetPublishing = "publishing"
	TargetPublished  = "published"
	TargetFailed     = "failed"
)

// Target is one connected account a post goes to.
type Target struct {
	AccountID string  `json:"connected_account_id"`
	Platform  string  `json:"platform"`
	Status    string  `json:"status"`
	Error     *string `json:"error"`
	// PublicationID is the network's id of the published post (platform_post_id in the API;
	// the API's publication_id is PublicationUUID of the post and the target's index).
	PublicationID string `json:"publication_id,omitempty"`
	// URL is the network's link to the published post, when it gave or Herald could build one.
	URL string `json:"url,omitempty"`
	// PublishedAt is when Herald committed the target's publication (nil before, and for
	// targets published before Herald recorded it: the post's updated_at stands in).
	PublishedAt *time.Time `json:"published_at,omitempty"`
	// Content is the target's own text, replacing the post's for this network (nil: the post's).
	Content *string `json:"content,omitempty"`
	// MediaIDs are the target's own media, replacing the post's (nil: the post's; empty: none).
	MediaIDs *[]string `json:"media_ids,omitempty"`
	// Options are the target's own network options (compact JSON of platforms' options type). The
	// account's default options fill in what they leave out, when the post is checked and again
	// when it goes out (platforms.MergeOptions).
	Options json.RawMessage `json:"options,omitempty"`
	// Thread are the follow-up parts of a thread (X, Bluesky, Threads), published after the post
	// as a chain of the account's own replies, in order; each part's PublicationID and URL are
	// filled in as it is published.
	Thread []ThreadPart `json:"thread,omitempty"`
	// FirstComment is the account's comment on its own post, published once the post (and its
	// thread) exists, with its own outcome.
	FirstComment *FirstComment `json:"first_comment,omitempty"`
}

// ThreadPart is one follow-up part of a thread: its own text and media, and once published the
// network's id and link (and Ref, what the network needs to answer it).
type ThreadPart struct {
	Content       string   `json:"content"`
	MediaIDs      []string `json:"media_ids,omitempty"`
	PublicationID string   `json:"publication_id,omitempty"`
	URL           string   `json:"url,omitempty"`
	Ref           string   `json:"ref,omitempty"`
}

// First comment statuses: pending until its step is made, then published or failed.
const (
	CommentPending   = "pending"
	CommentPublished = "published"
	CommentFailed    = "failed"
)

// FirstComment is a target's first comment and its outcome.
type FirstComment struct {
	Content       string `json:"content"`
	Status        string `json:"status"`
	PublicationID string `json:"publication_id,omitempty"`
	URL           string `json:"url,omitempty"`
	Error         string `json:"error,omitempty"`
}

// Steps is how many network calls the target's publication takes: the post, each thread part,
// and the first comment.
func (t *Target) Steps() int {
	n := 1 + len(t.Thread)
	if t.FirstComment != nil {
		n++
	}
	return n
}

// Missing reports whether a published target still lacks a step: a thread part or its first
// comment (a retry publishes only what is missing, never the post again).
func (t *Target) Missing() bool {
	if t.PublicationID == "" {
		return false
	}
	for _, p := range t.Thread {
		if p.PublicationID == "" {
			return true
		}
	}
	return t.FirstComment != nil && t.FirstComment.Status != CommentPublished
}

// EffectiveContent is the text the target's network receives.
func (t *Target) EffectiveContent(p *Post) string {
	text, _ := effective(t.Content, t.MediaIDs, p.Content, p.MediaIDs)
	return text
}

// EffectiveMedia are the media the target's network receives.
func (t *Target) EffectiveMedia(p *Post) []string {
	_, media := effective(t.Content, t.MediaIDs, p.Content, p.MediaIDs)
	return media
}

// effective is a target's own text and media where it has them, else its post's.
func effective(ownText *string, ownMedia *[]string, text string, media []string) (string, []string) {
	if ownText != nil {
		text = *ownText
	}
	if ownMedia != nil {
		media = *ownMedia
	}
	return text, media
}

// Post is a post's record.
type Post struct {
	ID     string `json:"id"`
	UserID string `json:"user_id"`
	// WorkspaceID is the workspace it belongs to ("" for its user's main workspace; Scope).
	WorkspaceID string     `json:"workspace_id,omitempty"`
	Content     string     `json:"content"`
	Status      string     `json:"status"`
	ScheduledAt *time.Time `json:"scheduled_at"`
	// ScheduledZone is the IANA time zone the post was scheduled in ("" when none was given): the
	// instant is ScheduledAt, the zone only says how its author reads it, so that the dashboard
	// shows the time as it was written beside UTC.
	ScheduledZone string    `json:"scheduled_zone,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	MediaIDs      []string  `json:"media_ids"`
	Targets       []Target  `json:"targets"`
	// Version counts the post's committed changes.
	Version uint64 `json:"version"`
	// TrackingID is the post's latest publish job.
	TrackingID *string `json:"tracking_id,omitempty"`
	// FinishedJob is the latest job whose outcome the post has taken.
	FinishedJob string `json:"finished_job,omitempty"`
	// QuotaCounted is set once the post counted against the free plan's monthly quota.
	QuotaCounted bool `json:"quota_counted,omitempty"`
	// CampaignID is the campaign the post was created in ("" for a post created alone).
	CampaignID string `json:"campaign_id,omitempty"`
	// Approval is the publish or schedule a pending_approval post waits to carry out (nil in
	// every other status).
	Approval *Approval `json:"approval,omitempty"`
	// RejectionReason is why the post's last request was rejected; cleared when it is submitted
	// again.
	RejectionReason *string `json:"rejection_reason,omitempty"`
	// ApprovalLink is the post's latest approval link (only its token's SHA-256); a new link
	// replaces it, which revokes the one before.
	ApprovalLink *ApprovalLink `json:"approval_link,omitempty"`
	// ApprovalLog is the post's approval history (requested, approved, rejected), oldest first,
	// at most MaxApprovalLog steps.
	ApprovalLog []ApprovalStep `json:"approval_log,omitempty"`
}

// Approval actions: what a post held for approval asked for.
const (
	ApprovalPublish  = "publish"
	ApprovalSchedule = "schedule"
)

// Approval is the request a pending_approval post keeps until it is approved or rejected.
type Approval struct {
	// Action is ApprovalPublish (publish now) or ApprovalSchedule (at ScheduledAt).
	Action      string     `json:"action"`
	ScheduledAt *time.Time `json:"scheduled_at,omitempty"`
	RequestedAt time.Time  `json:"requested_at"`
	// RequestedBy names who asked: "key:<id>", "oauth:<client>", "user:<e-mail>" (a person on the
	// dashboard).
	RequestedBy string `json:"requested_by"`
}

// ApprovalLink is a post's signed approval link: the SHA-256 of its random token, when it
// expires, and when it was used (a link works once).
type ApprovalLink struct {
	Hash      []byte     `json:"hash"`
	ExpiresAt time.Time  `json:"expires_at"`
	UsedAt    *time.Time `json:"used_at,omitempty"`
}

// Approval log kinds (the same names as the webhook events, without "post.").
const (
	ApprovalRequested = "approval_requested"
	ApprovalApproved  = "approved"
	ApprovalRejected  = "rejected"
)

// MaxApprovalLog is how many approval steps a post keeps (the oldest are dropped).
const MaxApprovalLog = 50

// ApprovalStep is one step of a post's approval history.
type ApprovalStep struct {
	Kind   string    `json:"kind"`
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
}

// Clone returns a deep copy, for building a post's next state before it is written.
func (p *Post) Clone() *Post {
	c := *p
	c.MediaIDs = append([]string(nil), p.MediaIDs...)
	c.Targets = append([]Target(nil), p.Targets...)
	if p.Approval != nil {
		a := *p.Approval
		c.Approval = &a
	}
	if p.ApprovalLink != nil {
		l := *p.ApprovalLink
		c.ApprovalLink = &l
	}
	c.ApprovalLog = append([]ApprovalStep(nil), p.ApprovalLog...)
	for i := range c.Targets {
		t := &c.Targets[i]
		if t.Thread != nil {
			t.Thread = append([]ThreadPart(nil), t.Thread...)
		}
		if t.FirstComment != nil {
			fc := *t.FirstComment
			t.FirstComment = &fc
		}
	}
	return &c
}
