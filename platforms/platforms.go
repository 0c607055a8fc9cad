// Package platforms defines what Herald asks of a social network and how a network's answers are
// classified. One adapter package per network (platforms/x, platforms/bluesky, ...) implements
// Adapter by making the network's real, documented HTTP calls; platforms/sim simulates all nine
// networks on loopback so that the same adapters run in tests, the sandbox and the bench suite.
//
// Adapters are stateless: the connected account's actor owns the credentials, the rate budget and
// the retry policy, and hands the adapter the current Credentials on every call.
package platforms

import (
	"context"
	"io"
	"net/http"
	"time"
)

// Platform is a network identifier as the API spells it.
type Platform string

// The nine networks Herald publishes to.
const (
	LinkedIn  Platform = "linkedin"
	Instagram Platform = "instagram"
	YouTube   Platform = "youtube"
	Pinterest Platform = "pinterest"
	TikTok    Platform = "tiktok"
	Threads   Platform = "threads"
	Facebook  Platform = "facebook"
	X         Platform = "twitter_x"
	Bluesky   Platform = "bluesky"
)

// All lists every platform in the order the API documents them.
var All = []Platform{LinkedIn, Instagram, YouTube, Pinterest, TikTok, Threads, Facebook, X, Bluesky}

// Name is the network's name as people write it ("X", "LinkedIn", "TikTok"), for messages.
func (p Platform) Name() string {
	switch p {
	case LinkedIn:
		return "LinkedIn"
	case Instagram:
		return "Instagram"
	case YouTube:
		return "YouTube"
	case Pinterest:
		return "Pinterest"
	case TikTok:
		return "TikTok"
	case Threads:
		return "Threads"
	case Facebook:
		return "Facebook"
	case X:
		return "X"
	case Bluesky:
		return "Bluesky"
	}
	return string(p)
}

// Valid reports whether p is one of the nine platform identifiers.
func (p Platform) Valid() bool {
	for _, q := range All {
		if p == q {
			return true
		}
	}
	return false
}

// Credentials are the tokens and network identity of one connected account. The account actor
// stores them encrypted and passes a copy to every adapter call.
type Credentials struct {
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
	// RefreshExpiresAt is when the refresh token itself stops working, when the network says.
	RefreshExpiresAt time.Time `json:"refresh_expires_at,omitzero"`
	// UserID is the network's id of the account: X user id, Bluesky DID, LinkedIn person id,
	// Facebook Page id, Instagram user id, Threads user id, YouTube channel id, Pinterest
	// username, TikTok open_id.
	UserID string `json:"user_id"`
	// Handle is the human-readable name (username, handle, Page name).
	Handle string `json:"handle,omitempty"`
	// Extra holds network-specific settings chosen at connect time, for example the Pinterest
	// board ("board_id"), the Bluesky PDS ("pds"), or an X client id ("client_id").
	Extra map[string]string `json:"extra,omitempty"`
}

// Media is one file attached to a post.
type Media struct {
	ID          string
	ContentType string // image/jpeg, image/png, video/mp4, video/quicktime, application/pdf
	Size        int64
	Filename    string
	// Open returns the file's bytes; adapters that upload call it once per upload attempt.
	Open func(ctx context.Context) (io.ReadCloser, error)
	// URL is a public, signed, expiring URL of the file, for networks that fetch media
	// themselves (Instagram and Threads containers, TikTok PULL_FROM_URL, Pinterest image_url).
	URL string
	// Conform returns the file in a form a network's ImageRule takes: the media itself when it
	// already fits, else a JPEG re-encoding (with its own Open and URL), made once and kept in
	// storage. Errors matching ErrUnconvertible are permanent. Nil when the file cannot be
	// converted (adapters then take it as it is or refuse it). See ConformImages.
	Conform func(ctx context.Context, rule ImageRule) (Media, error)
	// AltText describes the media for people who cannot see it; sent to the networks that take
	// it (AltTextMax).
	AltText string
}

// IsVideo reports whether the media is a video.
func (m Media) IsVideo() bool { return len(m.ContentType) > 6 && m.ContentType[:6] == "video/" }

// Post is what Herald asks a network to publish.
type Post struct {
	Text  string
	Media []Media
	// Options are the target's options for the network (its *XxxOptions; nil: none given). They
	// were checked by CheckOptions before the post was accepted.
	Options Options
}

// MediaLimits are what a network takes of a post's media, as its adapter's Validate checks them;
// GET /v1/accounts/:id/capabilities publishes them.
type MediaLimits struct {
	// Required says a post needs at least one media (no text-only posts).
	Required bool `json:"required"`
	// MaxItems is how many media one post takes.
	MaxItems int `json:"max_items"`
	// MinItems is the fewest media of a post with several (a carousel or gallery); one media
	// alone is a single post. 0 where a post takes one media at most.
	MinItems int `json:"min_items"`
	// MaxImages and MaxVideos bound the photos and the videos of one post; MinImages is the
	// fewest photos of a post with photos (TikTok's photo posts take 2 or more).
	MaxImages int `json:"max_images"`
	MinImages int `json:"min_images"`
	MaxVideos int `json:"max_videos"`
	// Mixed says photos and videos may share one post (an Instagram or Threads carousel).
	Mixed bool `json:"mixed"`
	// Types are the content types taken (after Herald's conversions of images).
	Types []string `json:"types"`
	// MaxImageBytes and MaxVideoBytes bound one file (0: Herald knows no bound of the network's
	// own; Herald's upload limit applies).
	MaxImageBytes int64 `json:"max_image_bytes"`
	MaxVideoBytes int64 `json:"max_video_bytes"`
	// VideoAlone says a video cannot go with other media in one post.
	VideoAlone bool `json:"video_alone"`
	// Documents says the network takes a PDF document (alone in its post), of at most
	// MaxDocumentBytes and MaxDocumentPages pages (LinkedIn).
	Documents        bool  `json:"documents"`
	MaxDocumentBytes int64 `json:"max_document_bytes"`
	MaxDocumentPages int   `json:"max_document_pages"`
}

// MediaLimiter is implemented by every adapter: its network's media limits.
type MediaLimiter interface {
	MediaLimits() MediaLimits
}

// Publication is a post as the network created it.
type Publication struct {
	// ID is the network's id of the post (tweet id, at:// URI, URN, media id, video id...).
	ID string `json:"id"`
	// URL is a link to the post on the network, when it can be built.
	URL string `json:"url,omitempty"`
	// Ref is what else the network needs to answer the post when its id is not enough (a
	// Bluesky record's CID, which a reply's strong reference carries). Kept with a thread's
	// parts so that the next part can answer the one before it.
	Ref string `json:"ref,omitempty"`
}

// RateInfo is what a network's response said about the caller's remaining budget. Zero fields
// mean the network did not say.
type RateInfo struct {
	Limit     int
	Remaining int
	Reset     time.Time
	Known     bool
}

// Result is the outcome of a successful call: what was created and what the network said about
// the rate budget on the way.
type Result struct {
	Publication Publication
	Rate        RateInfo
}

// Adapter is one network. Every method makes real HTTP calls to the base URLs of its Config and
// classifies failures as *Error.
type Adapter interface {
	// Platform names the network.
	Platform() Platform
	// Validate checks the network's content rules (text length as the network counts it, media
	// required or refused, counts and types) without any network call.
	Validate(p Post) error
	// Publish creates the post, uploading media first as the network requires.
	Publish(ctx context.Context, c Credentials, p Post) (Result, error)
	// Refresh exchanges the refresh token (or session) for fresh credentials. The returned
	// credentials keep the old refresh token when the network does not send a new one.
	Refresh(ctx context.Context, c Credentials) (Credentials, error)
	// Revoke invalidates the tokens at the network, best effort.
	Revoke(ctx context.Context, c Credentials) error
	// Lookup looks for a post with this text created by the account at or after since. It
	// resolves an attempt whose outcome is unknown. found is false when the network has no such
	// post; ErrLookupUnsupported when the network offers no way to look.
	Lookup(ctx context.Context, c Credentials, p Post, since time.Time) (pub Publication, found bool, err error)
}

// Connector is implemented by adapters of networks that connect through an OAuth redirect in the
// browser (every network but X and Bluesky, which connect with credentials the user brings).
type Connector interface {
	// AuthorizeURL returns the network's consent page for this state, redirect URI and PKCE
	// challenge (S256; empty when the network does not take PKCE).
	AuthorizeURL(state, redirectURI, codeChallenge string) string
	// Exchange trades an authorization code for credentials and fills in the network identity
	// (UserID, Handle).
	Exchange(ctx context.Context, code, redirectURI, codeVerifier string) (Credentials, error)
	// UsesPKCE reports whether the network takes a PKCE challenge.
	UsesPKCE() bool
}

// Config configures one adapter. Base URLs default to the network's production hosts and are
// pointed at platforms/sim in tests and in sandbox mode.
type Config struct {
	// BaseURL is the API host, for example https://api.x.com. For networks with several hosts
	// (authorize page, upload host, video service) see AuthURL and UploadURL.
	BaseURL string
	// AuthURL is the host of the browser consent page, when it differs from BaseURL.
	AuthURL string
	// UploadURL is the media upload host, when it differs from BaseURL.
	UploadURL string
	// GraphURL is the Facebook Graph API host, for the Instagram professional accounts connected
	// through a Facebook consent (their calls go to graph.facebook.com with the Page's token,
	// not to graph.instagram.com); empty: Facebook's production host.
	GraphURL     string
	ClientID     string
	ClientSecret string
	// HTTPClient makes the calls; nil means a client with sensible timeouts.
	HTTPClient *http.Client
	// PollInterval bounds how often asynchronous media processing is polled (0: the network's
	// suggestion or one second).
	PollInterval time.Duration
	// Cards reads the pages of link cards, for the networks that show only the card a post sends
	// (Bluesky, LinkedIn); nil: posts go out without cards.
	Cards CardReader
}

// Metrics are a publication's counters as a network reports them. A nil field means the network
// does not report that counter (Herald never invents one).
type Metrics struct {
	Views    *int64 `json:"views"`
	Likes    *int64 `json:"likes"`
	Comments *int64 `json:"comments"`
	Shares   *int64 `json:"shares"`
}

// Comment is a comment on a publication (or a reply to one).
type Comment struct {
	ID string `json:"id"`
	// PublicationID is the network's id of the post commented on.
	PublicationID string `json:"publication_id"`
	// ParentID is the comment this one answers; empty for a comment on the publication itself.
	// YouTube threads are one level deep: a reply's parent is its top-level comment.
	ParentID  string    `json:"parent_id,omitempty"`
	Author    string    `json:"author"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
	// ByAccount is true for the connected account's own replies.
	ByAccount bool `json:"by_account"`
}

// Message is a direct message.
type Message struct {
	ID             string    `json:"id"`
	ConversationID string    `json:"conversation_id"`
	From           string    `json:"from"`
	Text           string    `json:"text"`
	CreatedAt      time.Time `json:"created_at"`
}

// Reader is implemented by adapters of networks whose live data Herald reads: metrics of a
// publication (X, Bluesky, YouTube, TikTok, Pinterest).
type Reader interface {
	Metrics(ctx context.Context, c Credentials, publicationID string) (Metrics, error)
}

// MetricsOf reads one publication's metrics through an adapter's batch read; a publication the
// batch does not return is the error missing builds (a platforms.ErrNotFound).
func MetricsOf(ctx context.Context, c Credentials, publicationID string,
	batch func(context.Context, Credentials, []string) (map[string]Metrics, error), missing func() error) (Metrics, error) {
	all, err := batch(ctx, c, []string{publicationID})
	if err != nil {
		return Metrics{}, err
	}
	m, ok := all[publicationID]
	if !ok {
		return Metrics{}, missing()
	}
	return m, nil
}

// Commenter is implemented by adapters of networks with a live comments inbox (X, Bluesky,
// YouTube).
type Commenter interface {
	// Comments lists a publication's comments and replies, newest first.
	Comments(ctx context.Context, c Credentials, publicationID string) ([]Comment, error)
	// Reply answers a comment; media only where the network takes it (X, Bluesky). The comment
	// is read first: one that is not a comment of publicationID is ErrNotFound and nothing is
	// posted.
	Reply(ctx context.Context, c Credentials, publicationID, commentID, text string, media []Media) (Comment, error)
}

// Messenger is implemented by adapters of networks with live direct messages (X, Bluesky).
type Messenger interface {
	// Conversation lists a conversation's messages, newest first; ErrNotFound when it is not the
	// account's.
	Conversation(ctx context.Context, c Credentials, conversationID string) ([]Message, error)
	// SendMessage sends a message in a conversation (peerID when the network needs it); media
	// on X only.
	SendMessage(ctx context.Context, c Credentials, conversationID, peerID, text string, media []Media) (Message, error)
}

// Liker is implemented by adapters of networks whose API lets an account like a comment (X,
// Bluesky; YouTube has no such call).
type Liker interface {
	// LikeComment likes (like true) or unlikes the comment commentID of publicationID. The comment
	// is read first: one that is not a comment of publicationID is ErrNotFound and nothing is
	// sent. Liking a comment already liked changes nothing; unliking one the account has not
	// liked is ErrNotLiked and nothing is sent.
	LikeComment(ctx context.Context, c Credentials, publicationID, commentID string, like bool) error
}

// Hider is implemented by adapters of networks whose API lets an account hide a reply to its
// own post (X hidden replies, Bluesky threadgate hiddenReplies, YouTube moderation).
type Hider interface {
	// HideComment hides (hide true) or shows again the comment commentID of publicationID. The
	// comment is read first: one that is not a comment of publicationID is ErrNotFound and
	// nothing is sent.
	HideComment(ctx context.Context, c Credentials, publicationID, commentID string, hide bool) error
}

// ConversationSummary is one direct message conversation of an account, as a listing shows it.
type ConversationSummary struct {
	ID string `json:"id"`
	// PeerID is the other member's network user id; PeerHandle their handle ("" when the
	// network did not name it).
	PeerID     string `json:"peer_id"`
	PeerHandle string `json:"peer_handle,omitempty"`
	// Last is the newest message.
	Last Message `json:"last"`
	// CanReply is false when the network says the account cannot write in it.
	CanReply bool `json:"can_reply"`
}

// ConversationLister is implemented by adapters of networks whose direct messages Herald lists
// (X, Bluesky).
type ConversationLister interface {
	// Conversations lists the account's one-to-one conversations, newest message first.
	// truncated is true when the network had more than the adapter reads in one listing.
	Conversations(ctx context.Context, c Credentials) (list []ConversationSummary, truncated bool, err error)
}
