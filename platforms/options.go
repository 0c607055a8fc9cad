package platforms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// This file is every network's options: what a post's target may ask of its network beyond text
// and media (a YouTube title and privacy, a TikTok privacy level, a Pinterest board...). Each
// network has one Go type, one JSON Schema (OptionsSchema, which the OpenAPI document and
// GET /v1/accounts/:id/capabilities publish) and one check (CheckOptions). The API's check of a
// post calls CheckOptions for each target; the adapters send the options as the network's API
// takes them; the simulator enforces them as the network does. Nothing else decides an option.
//
// Herald never picks an option for the user that the network asks the user to pick: a TikTok
// target without a privacy level (in the target or the account's defaults) is refused, naming
// the creator's choices (TikTok's content-sharing guidelines for Direct Post).

// Options are one target's options for its network: a pointer to the network's options type
// (*YouTubeOptions, *TikTokOptions, ...).
type Options interface {
	// Network is the network the options are for.
	Network() Platform
}

// YouTubeOptions are a YouTube upload's (videos.insert snippet and status).
type YouTubeOptions struct {
	// Title is the video's title (≤ 100 characters, no < or >); empty: the text's first line.
	Title string `json:"title,omitempty"`
	// PrivacyStatus is public, unlisted or private (YouTube's default: public).
	PrivacyStatus string `json:"privacy_status,omitempty"`
	// MadeForKids is the audience declaration (status.selfDeclaredMadeForKids).
	MadeForKids *bool `json:"made_for_kids,omitempty"`
	// CategoryID is a video category of the channel's region (default 22, People & Blogs).
	CategoryID string `json:"category_id,omitempty"`
	// Tags are the video's keywords (≤ 500 characters together).
	Tags []string `json:"tags,omitempty"`
	// PlaylistID is a playlist of the channel the video is added to once uploaded.
	PlaylistID string `json:"playlist_id,omitempty"`
	// NotifySubscribers asks YouTube to notify the channel's subscribers (its default: true).
	NotifySubscribers *bool `json:"notify_subscribers,omitempty"`
}

// TikTokOptions are a TikTok Direct Post's post_info.
type TikTokOptions struct {
	// PrivacyLevel is one of the creator's current privacy_level_options. Required.
	PrivacyLevel string `json:"privacy_level,omitempty"`
	// AllowComment, AllowDuet and AllowStitch are off unless set.
	AllowComment bool `json:"allow_comment,omitempty"`
	AllowDuet    bool `json:"allow_duet,omitempty"`
	AllowStitch  bool `json:"allow_stitch,omitempty"`
	// BrandOrganic discloses the creator's own brand ("Promotional content").
	BrandOrganic bool `json:"brand_organic,omitempty"`
	// BrandedContent discloses a paid partnership; not with SELF_ONLY.
	BrandedContent bool `json:"branded_content,omitempty"`
	// IsAIGenerated labels the video as AI-generated content.
	IsAIGenerated bool `json:"is_ai_generated,omitempty"`
	// PhotoCoverIndex is the photo of a photo post shown as its cover: 0-based, less than the
	// number of photos; default 0 (the first).
	PhotoCoverIndex int `json:"photo_cover_index,omitempty"`
}

// PinterestOptions are a Pin's.
type PinterestOptions struct {
	// BoardID is one of the account's boards. Required.
	BoardID string `json:"board_id,omitempty"`
	// Title is the Pin's title (≤ 100 characters).
	Title string `json:"title,omitempty"`
	// Link is the Pin's destination (https, ≤ 2048 characters).
	Link string `json:"link,omitempty"`
}

// InstagramOptions are an Instagram container's.
type InstagramOptions struct {
	// Type is feed, reel or story; default: a video is a reel, anything else a feed post.
	Type string `json:"type,omitempty"`
	// ShareToFeed shows a reel in the feed too (reels only; Instagram's default: true).
	ShareToFeed *bool `json:"share_to_feed,omitempty"`
	// Collaborators are up to three Instagram usernames invited as collaborators (feed and reels).
	Collaborators []string `json:"collaborators,omitempty"`
}

// FacebookOptions are a Page post's.
type FacebookOptions struct {
	// Type is feed, reel or story; default feed.
	Type string `json:"type,omitempty"`
	// Link is the link attached to a feed post without media (http or https); when absent, the
	// first link of the text (see LinkCard).
	Link string `json:"link,omitempty"`
	// LinkCard false attaches no link (Facebook may still preview a link of the text itself).
	LinkCard *bool `json:"link_card,omitempty"`
}

// LinkedInOptions are a LinkedIn post's.
type LinkedInOptions struct {
	// Visibility is PUBLIC or CONNECTIONS; default PUBLIC.
	Visibility string `json:"visibility,omitempty"`
	// Link is the page a post without media shares as an article (http or https); when absent,
	// the first link of the text (see LinkCard).
	Link string `json:"link,omitempty"`
	// LinkCard false shares no article: the post is its text alone.
	LinkCard *bool `json:"link_card,omitempty"`
	// DocumentTitle is the title of a document post (a PDF; ≤ 400 characters); LinkedIn requires
	// one, so without it the title is the file's name without its extension (DocumentTitle).
	DocumentTitle string `json:"document_title,omitempty"`
}

// XOptions are a post's on X.
type XOptions struct {
	// ReplySettings is everyone, following or mentioned_users; default everyone.
	ReplySettings string `json:"reply_settings,omitempty"`
	// Poll attaches a poll (no media with a poll).
	Poll *XPoll `json:"poll,omitempty"`
}

// XPoll is a poll on X.
type XPoll struct {
	// Options are 2 to 4 choices of 1 to 25 characters.
	Options []string `json:"options"`
	// DurationMinutes is how long the poll runs: 5 to 10,080 (seven days).
	DurationMinutes int `json:"duration_minutes"`
}

// BlueskyOptions are a Bluesky post record's.
type BlueskyOptions struct {
	// Langs are up to three BCP 47 language tags of the text.
	Langs []string `json:"langs,omitempty"`
	// Labels are self-labels: sexual, nudity, porn, graphic-media.
	Labels []string `json:"labels,omitempty"`
	// Link is the page a post without media shows as a card (an external embed; http or https);
	// when absent, the first link of the text (see LinkCard).
	Link string `json:"link,omitempty"`
	// LinkCard false attaches no card.
	LinkCard *bool `json:"link_card,omitempty"`
}

// ThreadsOptions are a Threads container's.
type ThreadsOptions struct {
	// ReplyControl is everyone, accounts_you_follow or mentioned_only; default everyone.
	ReplyControl string `json:"reply_control,omitempty"`
	// TopicTag is the post's topic (1 to 50 characters, no period or ampersand).
	TopicTag string `json:"topic_tag,omitempty"`
	// Link is the link_attachment of a text post (http or https); when absent, the first link of
	// the text (see LinkCard).
	Link string `json:"link,omitempty"`
	// LinkCard false sends no link_attachment (Threads may still preview a link of the text
	// itself).
	LinkCard *bool `json:"link_card,omitempty"`
}

func (*YouTubeOptions) Network() Platform   { return YouTube }
func (*TikTokOptions) Network() Platform    { return TikTok }
func (*PinterestOptions) Network() Platform { return Pinterest }
func (*InstagramOptions) Network() Platform { return Instagram }
func (*FacebookOptions) Network() Platform  { return Facebook }
func (*LinkedInOptions) Network() Platform  { return LinkedIn }
func (*XOptions) Network() Platform         { return X }
func (*BlueskyOptions) Network() Platform   { return Bluesky }
func (*ThreadsOptions) Network() Platform   { return Threads }

// The enumerations of the options, as the networks spell them.
var (
	YouTubePrivacyStatuses = []string{"public", "unlisted", "private"}
	TikTokPrivacyLevels    = []string{"PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "FOLLOWER_OF_CREATOR", "SELF_ONLY"}
	InstagramTypes         = []string{"feed", "reel", "story"}
	FacebookTypes          = []string{"feed", "reel", "story"}
	LinkedInVisibilities   = []string{"PUBLIC", "CONNECTIONS"}
	XReplySettings         = []string{"everyone", "following", "mentioned_users"}
	BlueskyLabels          = []string{"sexual", "nudity", "porn", "graphic-media"}
	ThreadsReplyControls   = []string{"everyone", "accounts_you_follow", "mentioned_only"}
)

// NewOptions returns the zero options of a network (nil for an unknown one).
func NewOptions(p Platform) Options {
	switch p {
	case YouTube:
		return &YouTubeOptions{}
	case TikTok:
		return &TikTokOptions{}
	case Pinterest:
		return &PinterestOptions{}
	case Instagram:
		return &InstagramOptions{}
	case Facebook:
		return &FacebookOptions{}
	case LinkedIn:
		return &LinkedInOptions{}
	case X:
		return &XOptions{}
	case Bluesky:
		return &BlueskyOptions{}
	case Threads:
		return &ThreadsOptions{}
	}
	return nil
}

// FieldError is one refusal (or warning) of a target's field: Field names it as the request
// does ("options.privacy_level", "content", "media[0].alt_text"), Message says why, safe to show.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// DecodeOptions reads a target's options (a JSON object; empty or null: none given) as the
// network's options: an unknown key, an option of another network, or a value of the wrong type
// is a FieldError naming it.
func DecodeOptions(p Platform, raw json.RawMessage) (Options, *FieldError) {
	if o, ok := decoded.get(p, raw); ok {
		return o, nil
	}
	o, fe := decodeOptions(p, raw)
	if fe == nil && len(raw) <= maxCachedOptions {
		decoded.put(p, raw, o)
	}
	return o, fe
}

// maxCachedOptions is the longest options document the decoding cache keeps.
const maxCachedOptions = 1024

// decodedOptions remembers options documents already decoded, by network and bytes: posts to
// one account often carry the same options, and each is decoded when it is checked and again
// when it goes out. Bounded; it starts over when full. get answers a copy, so that a caller may
// change what it gets.
type decodedOptions struct {
	mu sync.RWMutex
	m  map[Platform]map[string]Options
	n  int
}

var decoded decodedOptions

func (d *decodedOptions) get(p Platform, raw json.RawMessage) (Options, bool) {
	d.mu.RLock()
	o, ok := d.m[p][string(raw)]
	d.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return cloneOptions(o), true
}

func (d *decodedOptions) put(p Platform, raw json.RawMessage, o Options) {
	d.mu.Lock()
	if d.m == nil || d.n >= 4096 {
		d.m, d.n = map[Platform]map[string]Options{}, 0
	}
	if d.m[p] == nil {
		d.m[p] = map[string]Options{}
	}
	d.m[p][string(raw)] = cloneOptions(o)
	d.n++
	d.mu.Unlock()
}

// cloneOptions is a copy of o (its slices shared: no caller changes them in place).
func cloneOptions(o Options) Options {
	switch o := o.(type) {
	case *YouTubeOptions:
		c := *o
		return &c
	case *TikTokOptions:
		c := *o
		return &c
	case *PinterestOptions:
		c := *o
		return &c
	case *InstagramOptions:
		c := *o
		return &c
	case *FacebookOptions:
		c := *o
		return &c
	case *LinkedInOptions:
		c := *o
		return &c
	case *XOptions:
		c := *o
		return &c
	case *BlueskyOptions:
		c := *o
		return &c
	case *ThreadsOptions:
		c := *o
		return &c
	}
	return o
}

// decodeOptions is DecodeOptions without the cache.
func decodeOptions(p Platform, raw json.RawMessage) (Options, *FieldError) {
	o := NewOptions(p)
	if o == nil {
		return nil, &FieldError{"options", fmt.Sprintf("unknown network %q", p)}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return o, nil
	}
	if raw[0] != '{' {
		return nil, &FieldError{"options", "must be an object"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(o)
	if err == nil {
		if _, more := dec.Token(); more != io.EOF {
			return nil, &FieldError{"options", "must be one JSON object"}
		}
		return o, nil
	}
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		return nil, &FieldError{"options." + te.Field, fmt.Sprintf("must be %s, not %s", typeName(te.Type.Kind().String()), te.Value)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		key := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		msg := fmt.Sprintf("%s has no option %q", p.Name(), key)
		if others := optionOf(key, p); len(others) > 0 {
			msg += fmt.Sprintf(" (it is an option of %s)", strings.Join(others, ", "))
		}
		return nil, &FieldError{"options." + key, msg}
	}
	return nil, &FieldError{"options", "is not valid JSON: " + err.Error()}
}

// typeName is a Go kind as a JSON type.
func typeName(kind string) string {
	switch {
	case kind == "bool":
		return "a boolean"
	case kind == "string":
		return "a string"
	case kind == "slice":
		return "an array"
	case kind == "struct", kind == "ptr", kind == "map":
		return "an object"
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "a number"
	}
	return kind
}

// optionOf names the networks (other than p) that have an option named key.
func optionOf(key string, p Platform) []string {
	var out []string
	for _, q := range All {
		if q == p {
			continue
		}
		if _, ok := OptionsSchema(q)["properties"].(map[string]any)[key]; ok {
			out = append(out, q.Name())
		}
	}
	return out
}

// MergeOptions lays a target's own options over an account's defaults, key by key (a key the
// target gives replaces the default's). Both are JSON objects or empty; the result is compact
// JSON, empty when neither gives anything.
func MergeOptions(defaults, own json.RawMessage) (json.RawMessage, error) {
	switch {
	case empty(defaults) && empty(own):
		return nil, nil
	case empty(defaults) && json.Valid(own):
		return own, nil
	case empty(own) && json.Valid(defaults):
		return defaults, nil
	}
	merged := map[string]json.RawMessage{}
	for _, raw := range []json.RawMessage{defaults, own} {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		for k, v := range m {
			merged[k] = v
		}
	}
	if len(merged) == 0 {
		return nil, nil
	}
	return json.Marshal(merged)
}

// ConnectDefaults are the default options a connection chose, as the adapters recorded them in
// the credentials' Extra when the account was connected (a Pinterest account's first board, a
// YouTube channel's or TikTok creator's chosen privacy): the account's default options when it
// has none of its own. nil when the connection chose none.
func ConnectDefaults(p Platform, extra map[string]string) json.RawMessage {
	var o Options
	switch {
	case p == Pinterest && extra["board_id"] != "":
		o = &PinterestOptions{BoardID: extra["board_id"]}
	case p == YouTube && slices.Contains(YouTubePrivacyStatuses, extra["privacy_status"]):
		o = &YouTubeOptions{PrivacyStatus: extra["privacy_status"]}
	case p == TikTok && slices.Contains(TikTokPrivacyLevels, extra["privacy_level"]):
		o = &TikTokOptions{PrivacyLevel: extra["privacy_level"]}
	}
	return EncodeOptions(o)
}

// empty reports whether raw gives no options: nothing, null or {}.
func empty(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte("{}"))
}

// EncodeOptions is options as stored and shown: compact JSON of the set fields; nil when none is.
func EncodeOptions(o Options) json.RawMessage {
	if o == nil {
		return nil
	}
	b, err := json.Marshal(o)
	if err != nil || string(b) == "{}" {
		return nil
	}
	return b
}

// Choice is one of a choice the network offers: a board, a category, a playlist.
type Choice struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Choices are what only the network knows about an account now: what its options may be. The
// fields a network has no such read for stay empty.
type Choices struct {
	// TikTok: the creator's info (creator_info/query).
	PrivacyLevelOptions     []string `json:"privacy_level_options,omitempty"`
	MaxVideoPostDurationSec int      `json:"max_video_post_duration_sec,omitempty"`
	CommentDisabled         bool     `json:"comment_disabled,omitempty"`
	DuetDisabled            bool     `json:"duet_disabled,omitempty"`
	StitchDisabled          bool     `json:"stitch_disabled,omitempty"`
	Nickname                string   `json:"nickname,omitempty"`
	// Pinterest: the account's boards.
	Boards []Choice `json:"boards,omitempty"`
	// YouTube: the video categories of the channel's region and the channel's playlists.
	Categories []Choice `json:"categories,omitempty"`
	Playlists  []Choice `json:"playlists,omitempty"`
}

// ChoiceReader is implemented by adapters of networks whose options depend on the account: TikTok
// (the creator's privacy levels and interactions), Pinterest (boards), YouTube (categories and
// playlists). The account's actor reads it within the account's budget.
type ChoiceReader interface {
	Choices(ctx context.Context, c Credentials) (Choices, error)
}

// RequiredOptions names the options a target of the network must have (in the target or in the
// account's defaults).
func RequiredOptions(p Platform) []string {
	switch p {
	case TikTok:
		return []string{"privacy_level"}
	case Pinterest:
		return []string{"board_id"}
	}
	return nil
}

// AltTextMax is the longest alt text (in characters) the network takes for a media; 0 when the
// network's API takes none (YouTube, TikTok), and the text is not sent.
func AltTextMax(p Platform) int {
	switch p {
	case X:
		return 1000 // media metadata alt_text.text
	case Bluesky:
		return 2000 // the app's limit on an image's alt
	case Pinterest:
		return 500 // Pin alt_text
	case LinkedIn:
		return 4086 // image altText
	case Instagram, Threads, Facebook:
		return 1000 // container alt_text; Page photo alt_text_custom
	}
	return 0
}

// Target is what CheckOptions knows of the target besides its options: the effective text and
// media the network would receive, and the account's live choices (nil when they could not be
// read: the checks that need them are skipped with a warning).
type Target struct {
	Text    string
	Media   []Media
	Choices *Choices
	// Defaults says the options are an account's defaults, not a post's: what needs a post (its
	// text and media, the options a post must have) is not judged.
	Defaults bool
}

// CheckOptions checks a target's options by its network's rules. errs refuse the target;
// warnings tell what Herald will do that the user might not expect.
func CheckOptions(o Options, t Target) (errs, warnings []FieldError) {
	c := &checker{defaults: t.Defaults}
	switch o := o.(type) {
	case *YouTubeOptions:
		c.youtube(o, t)
	case *TikTokOptions:
		c.tiktok(o, t)
	case *PinterestOptions:
		c.pinterest(o, t)
	case *InstagramOptions:
		c.instagram(o, t)
	case *FacebookOptions:
		c.facebook(o, t)
	case *LinkedInOptions:
		c.linkedin(o, t)
		c.card(o, t)
	case *XOptions:
		c.x(o, t)
	case *BlueskyOptions:
		c.bluesky(o)
		c.card(o, t)
	case *ThreadsOptions:
		c.threads(o)
		c.card(o, t)
	}
	for i, m := range t.Media {
		if m.AltText == "" {
			continue
		}
		field := fmt.Sprintf("media[%d].alt_text", i)
		switch max := AltTextMax(o.Network()); {
		case m.IsDocument():
			c.warnings = append(c.warnings, FieldError{field, "a document takes no alt text; it is not sent"})
		case max == 0:
			c.warnings = append(c.warnings, FieldError{field, fmt.Sprintf("%s takes no alt text; it is not sent", o.Network().Name())})
		case utf8.RuneCountInString(m.AltText) > max:
			c.errs = append(c.errs, FieldError{field, fmt.Sprintf("is %d characters; %s allows %d", utf8.RuneCountInString(m.AltText), o.Network().Name(), max)})
		}
	}
	return c.errs, c.warnings
}

type checker struct {
	errs, warnings []FieldError
	defaults       bool
}

func (c *checker) fail(field, msg string) {
	c.errs = append(c.errs, FieldError{"options." + field, msg})
}

func (c *checker) warn(field, msg string) {
	c.warnings = append(c.warnings, FieldError{"options." + field, msg})
}

func (c *checker) oneOf(field, v string, allowed []string) bool {
	if v == "" || slices.Contains(allowed, v) {
		return true
	}
	c.fail(field, fmt.Sprintf("must be one of %s, not %q", strings.Join(allowed, ", "), v))
	return false
}

func (c *checker) maxChars(field, v string, max int) {
	if n := utf8.RuneCountInString(v); n > max {
		c.fail(field, fmt.Sprintf("is %d characters; at most %d", n, max))
	}
}

func (c *checker) link(field, v string, schemes ...string) {
	if v == "" {
		return
	}
	u, err := url.Parse(v)
	if err != nil || !slices.Contains(schemes, u.Scheme) || u.Host == "" {
		c.fail(field, fmt.Sprintf("must be an absolute %s URL", strings.Join(schemes, " or ")))
		return
	}
	c.maxChars(field, v, 2048)
}

func hasVideo(media []Media) bool {
	return slices.ContainsFunc(media, Media.IsVideo)
}

func names(cs []Choice) string {
	out := make([]string, len(cs))
	for i, ch := range cs {
		out[i] = fmt.Sprintf("%s (%s)", ch.ID, ch.Name)
	}
	return strings.Join(out, ", ")
}

func hasChoice(cs []Choice, id string) bool {
	return slices.ContainsFunc(cs, func(ch Choice) bool { return ch.ID == id })
}

// YouTubeTitle is the title a YouTube upload gets: the options' title, else the text's first line
// cut to 100 characters.
func YouTubeTitle(o *YouTubeOptions, text string) string {
	if o != nil && o.Title != "" {
		return o.Title
	}
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > 100 {
		line = string([]rune(line)[:100])
	}
	return line
}

func (c *checker) youtube(o *YouTubeOptions, t Target) {
	if o.Title == "" && !c.defaults {
		c.warn("title", fmt.Sprintf("not given; the title is the text's first line: %q", YouTubeTitle(o, t.Text)))
	}
	c.maxChars("title", o.Title, 100)
	if strings.ContainsAny(o.Title, "<>") {
		c.fail("title", "may not contain < or >")
	}
	c.oneOf("privacy_status", o.PrivacyStatus, YouTubePrivacyStatuses)
	if o.CategoryID != "" {
		if _, err := strconv.ParseUint(o.CategoryID, 10, 32); err != nil {
			c.fail("category_id", "must be a YouTube video category id (digits)")
		} else if t.Choices != nil && len(t.Choices.Categories) > 0 && !hasChoice(t.Choices.Categories, o.CategoryID) {
			c.fail("category_id", fmt.Sprintf("%q is not a category YouTube offers this channel; it offers %s", o.CategoryID, names(t.Choices.Categories)))
		}
	}
	total := 0
	for i, tag := range o.Tags {
		if strings.TrimSpace(tag) == "" || strings.ContainsAny(tag, "<>") {
			c.fail(fmt.Sprintf("tags[%d]", i), "must be a non-empty keyword without < or >")
		}
		total += utf8.RuneCountInString(tag)
	}
	if total > 500 {
		c.fail("tags", fmt.Sprintf("are %d characters together; at most 500", total))
	}
	if o.PlaylistID != "" && t.Choices != nil && !hasChoice(t.Choices.Playlists, o.PlaylistID) {
		c.fail("playlist_id", fmt.Sprintf("%q is not a playlist of this channel", o.PlaylistID))
	}
}

func (c *checker) tiktok(o *TikTokOptions, t Target) {
	var offered []string
	if t.Choices != nil {
		offered = t.Choices.PrivacyLevelOptions
	}
	switch {
	case o.PrivacyLevel == "" && c.defaults:
	case o.PrivacyLevel == "" && offered != nil:
		c.fail("privacy_level", fmt.Sprintf("is required: TikTok asks the creator to choose; this creator may post with %s", strings.Join(offered, ", ")))
	case o.PrivacyLevel == "":
		c.fail("privacy_level", fmt.Sprintf("is required: TikTok asks the creator to choose one of %s", strings.Join(TikTokPrivacyLevels, ", ")))
	case !c.oneOf("privacy_level", o.PrivacyLevel, TikTokPrivacyLevels):
	case offered != nil && !slices.Contains(offered, o.PrivacyLevel):
		c.fail("privacy_level", fmt.Sprintf("%s is not offered to this creator now; TikTok offers %s", o.PrivacyLevel, strings.Join(offered, ", ")))
	}
	photos := len(t.Media) > 0 && !hasVideo(t.Media)
	if t.Choices == nil && !c.defaults {
		c.warn("privacy_level", "the creator's current choices could not be read; TikTok checks them when the post goes out")
	} else if t.Choices != nil {
		for _, f := range []struct {
			field     string
			on, unset bool
		}{{"allow_comment", o.AllowComment, t.Choices.CommentDisabled}, {"allow_duet", o.AllowDuet, t.Choices.DuetDisabled}, {"allow_stitch", o.AllowStitch, t.Choices.StitchDisabled}} {
			if f.on && f.unset && !(photos && !c.defaults && f.field != "allow_comment") {
				c.fail(f.field, "the creator has turned this interaction off in TikTok's settings")
			}
		}
	}
	if o.BrandedContent && o.PrivacyLevel == "SELF_ONLY" {
		c.fail("branded_content", "branded content cannot be private (SELF_ONLY); choose another privacy level")
	}
	switch {
	case o.PhotoCoverIndex < 0:
		c.fail("photo_cover_index", fmt.Sprintf("is %d; the first photo is 0", o.PhotoCoverIndex))
	case c.defaults || o.PhotoCoverIndex == 0:
	case !photos:
		c.fail("photo_cover_index", "applies to photo posts only")
	case o.PhotoCoverIndex >= len(t.Media):
		c.fail("photo_cover_index", fmt.Sprintf("is %d; the post has %d photos, numbered from 0 to %d", o.PhotoCoverIndex, len(t.Media), len(t.Media)-1))
	}
	if photos && !c.defaults && (o.AllowDuet || o.AllowStitch) {
		c.warn("allow_duet", "a photo post has no duets or stitches; allow_duet and allow_stitch are not sent")
	}
}

// MaxDocumentTitle is the longest title of a LinkedIn document post Herald sends, in characters.
const MaxDocumentTitle = 400

// DocumentTitle is the title a LinkedIn document post gets: the options' title, else the file's
// name without its extension (LinkedIn requires a title).
func DocumentTitle(o *LinkedInOptions, m Media) string {
	if o != nil && o.DocumentTitle != "" {
		return o.DocumentTitle
	}
	name := m.Filename
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[:i]
	}
	if strings.TrimSpace(name) == "" {
		name = "Document"
	}
	return name
}

func (c *checker) linkedin(o *LinkedInOptions, t Target) {
	c.oneOf("visibility", o.Visibility, LinkedInVisibilities)
	if o.DocumentTitle == "" {
		return
	}
	c.maxChars("document_title", o.DocumentTitle, MaxDocumentTitle)
	if strings.TrimSpace(o.DocumentTitle) == "" {
		c.fail("document_title", "must not be blank")
	}
	if !c.defaults && !slices.ContainsFunc(t.Media, Media.IsDocument) {
		c.fail("document_title", "applies to a document post (one PDF) only")
	}
}

func (c *checker) pinterest(o *PinterestOptions, t Target) {
	switch {
	case o.BoardID == "" && c.defaults:
	case o.BoardID == "":
		msg := "is required: choose the board the Pin goes to"
		if t.Choices != nil && len(t.Choices.Boards) > 0 {
			msg += "; the account's boards are " + names(t.Choices.Boards)
		}
		c.fail("board_id", msg)
	case t.Choices != nil && !hasChoice(t.Choices.Boards, o.BoardID):
		c.fail("board_id", fmt.Sprintf("%q is not a board of this account", o.BoardID))
	}
	c.maxChars("title", o.Title, 100)
	c.link("link", o.Link, "https")
}

var igUsername = regexp.MustCompile(`^[A-Za-z0-9._]{1,30}$`)

func (c *checker) instagram(o *InstagramOptions, t Target) {
	c.oneOf("type", o.Type, InstagramTypes)
	if !c.defaults {
		c.shape(o.Type, t.Media)
		if o.ShareToFeed != nil && o.Type != "reel" && (o.Type != "" || !hasVideo(t.Media)) {
			c.fail("share_to_feed", "applies to reels only")
		}
	} else if o.ShareToFeed != nil && o.Type != "" && o.Type != "reel" {
		c.fail("share_to_feed", "applies to reels only")
	}
	if len(o.Collaborators) > 3 {
		c.fail("collaborators", fmt.Sprintf("are %d; at most 3", len(o.Collaborators)))
	}
	if len(o.Collaborators) > 0 && o.Type == "story" {
		c.fail("collaborators", "a story takes no collaborators")
	}
	for i, u := range o.Collaborators {
		if !igUsername.MatchString(strings.TrimPrefix(u, "@")) {
			c.fail(fmt.Sprintf("collaborators[%d]", i), "must be an Instagram username")
		}
	}
}

// shape checks the media a Meta post type takes: a reel is one video, a story one photo or video.
func (c *checker) shape(typ string, media []Media) {
	switch typ {
	case "reel":
		if len(media) != 1 || !media[0].IsVideo() {
			c.fail("type", "a reel is one video")
		}
	case "story":
		if len(media) != 1 {
			c.fail("type", "a story is one photo or one video")
		}
	}
}

func (c *checker) facebook(o *FacebookOptions, t Target) {
	c.oneOf("type", o.Type, FacebookTypes)
	if !c.defaults {
		c.shape(o.Type, t.Media)
	}
	if o.Link != "" {
		if (o.Type != "" && o.Type != "feed") || (!c.defaults && len(t.Media) > 0) {
			c.fail("link", "a link goes with a feed post without media")
		}
		c.link("link", o.Link, "http", "https")
		c.unused(o)
	}
}

// card checks the link card options of Bluesky, Threads and LinkedIn: the link an absolute http
// or https URL of at most 2,048 characters, given for a post without media (a post carries one
// attachment: its media or a card).
func (c *checker) card(o CardOptions, t Target) {
	link, _ := o.CardSettings()
	if link == "" {
		return
	}
	c.link("link", link, "http", "https")
	if !c.defaults && len(t.Media) > 0 {
		c.fail("link", "a link card goes with a post without media")
	}
	c.unused(o)
}

// unused warns of a link that link_card false leaves out.
func (c *checker) unused(o CardOptions) {
	if link, on := o.CardSettings(); link != "" && on != nil && !*on {
		c.warn("link", "is not used: link_card is false, so no card is attached")
	}
}

func (c *checker) x(o *XOptions, t Target) {
	c.oneOf("reply_settings", o.ReplySettings, XReplySettings)
	if o.Poll == nil {
		return
	}
	if n := len(o.Poll.Options); n < 2 || n > 4 {
		c.fail("poll.options", fmt.Sprintf("are %d; a poll has 2 to 4", n))
	}
	for i, opt := range o.Poll.Options {
		if n := utf8.RuneCountInString(opt); n < 1 || n > 25 {
			c.fail(fmt.Sprintf("poll.options[%d]", i), fmt.Sprintf("is %d characters; 1 to 25", n))
		}
	}
	if d := o.Poll.DurationMinutes; d < 5 || d > 10080 {
		c.fail("poll.duration_minutes", fmt.Sprintf("is %d; 5 to 10080 minutes (seven days)", d))
	}
	if len(t.Media) > 0 && !c.defaults {
		c.fail("poll", "a post with a poll cannot carry media")
	}
}

// bcp47 is the shape of a language tag (RFC 5646's language, script, region and variants).
var bcp47 = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?(-([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*$`)

func (c *checker) bluesky(o *BlueskyOptions) {
	if len(o.Langs) > 3 {
		c.fail("langs", fmt.Sprintf("are %d; at most 3", len(o.Langs)))
	}
	for i, l := range o.Langs {
		if !bcp47.MatchString(l) {
			c.fail(fmt.Sprintf("langs[%d]", i), fmt.Sprintf("%q is not a BCP 47 language tag", l))
		}
	}
	for i, l := range o.Labels {
		c.oneOf(fmt.Sprintf("labels[%d]", i), l, BlueskyLabels)
	}
}

func (c *checker) threads(o *ThreadsOptions) {
	c.oneOf("reply_control", o.ReplyControl, ThreadsReplyControls)
	if o.TopicTag != "" {
		c.maxChars("topic_tag", o.TopicTag, 50)
		if strings.ContainsAny(o.TopicTag, ".&") {
			c.fail("topic_tag", "may not contain a period or an ampersand")
		}
	}
}

// OptionsSchema is a network's options as a JSON Schema (2020-12) object: what the OpenAPI
// document and an account's capabilities publish. Its properties are exactly the fields of the
// network's options type (TestOptionsSchemaMatchesTypes).
func OptionsSchema(p Platform) map[string]any {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	enum := func(desc string, values []string) map[string]any {
		return map[string]any{"type": "string", "enum": values, "description": desc}
	}
	boolean := func(desc string) map[string]any { return map[string]any{"type": "boolean", "description": desc} }
	cardLink := func(desc string) map[string]any {
		return map[string]any{"type": "string", "format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://", "maxLength": 2048, "description": desc}
	}
	list := func(desc string, max int, item map[string]any) map[string]any {
		s := map[string]any{"type": "array", "items": item, "description": desc}
		if max > 0 {
			s["maxItems"] = max
		}
		return s
	}
	var props map[string]any
	switch p {
	case YouTube:
		props = map[string]any{
			"title":              map[string]any{"type": "string", "maxLength": 100, "pattern": "^[^<>]*$", "description": "The video's title; when absent, the text's first line."},
			"privacy_status":     enum("Who can watch the video.", YouTubePrivacyStatuses),
			"made_for_kids":      boolean("Whether the video is made for kids (the audience declaration)."),
			"category_id":        map[string]any{"type": "string", "pattern": "^[0-9]+$", "description": "A video category id (capabilities: choices.categories); default 22."},
			"tags":               list("The video's keywords (500 characters together at most).", 0, map[string]any{"type": "string", "minLength": 1}),
			"playlist_id":        str("A playlist of the channel (capabilities: choices.playlists) the video is added to."),
			"notify_subscribers": boolean("Whether YouTube notifies the channel's subscribers (default true)."),
		}
	case TikTok:
		props = map[string]any{
			"privacy_level":   enum("Who can watch: one of the creator's privacy_level_options (capabilities: choices). Required.", TikTokPrivacyLevels),
			"allow_comment":   boolean("Allow comments (off unless set)."),
			"allow_duet":      boolean("Allow duets (off unless set)."),
			"allow_stitch":    boolean("Allow stitches (off unless set)."),
			"brand_organic":   boolean("Discloses promotional content for the creator's own brand."),
			"branded_content": boolean("Discloses a paid partnership; not with SELF_ONLY."),
			"is_ai_generated": boolean("Labels the video as AI-generated."),
			"photo_cover_index": map[string]any{"type": "integer", "minimum": 0, "maximum": 34,
				"description": "A photo post's cover: the 0-based index of one of its photos (default 0, the first)."},
		}
	case Pinterest:
		props = map[string]any{
			"board_id": str("The board the Pin goes to (capabilities: choices.boards). Required."),
			"title":    map[string]any{"type": "string", "maxLength": 100, "description": "The Pin's title."},
			"link":     map[string]any{"type": "string", "format": "uri", "pattern": "^https://", "maxLength": 2048, "description": "The Pin's destination link."},
		}
	case Instagram:
		props = map[string]any{
			"type":          enum("Feed post, reel or story; default: a video is a reel, else a feed post.", InstagramTypes),
			"share_to_feed": boolean("Reels: also show the reel in the feed (default true)."),
			"collaborators": list("Instagram usernames invited as collaborators.", 3, map[string]any{"type": "string", "pattern": "^@?[A-Za-z0-9._]{1,30}$"}),
		}
	case Facebook:
		props = map[string]any{
			"type":      enum("Feed post, reel or story; default feed.", FacebookTypes),
			"link":      cardLink("The link attached to a feed post without media; default: the text's first link."),
			"link_card": boolean("Whether the link is attached (default true); false: none (Facebook may still preview a link of the text itself)."),
		}
	case LinkedIn:
		props = map[string]any{
			"visibility": enum("Who can see the post; default PUBLIC.", LinkedInVisibilities),
			"link":       cardLink("The page a post without media shares as an article (title, description, thumbnail read from the page); default: the text's first link."),
			"link_card":  boolean("Whether the link is shared as an article (default true); false: the post is its text alone."),
			"document_title": map[string]any{"type": "string", "minLength": 1, "maxLength": MaxDocumentTitle,
				"description": "A document post's (one PDF) title; default: the file's name without its extension."},
		}
	case X:
		props = map[string]any{
			"reply_settings": enum("Who can reply; default everyone.", XReplySettings),
			"poll": map[string]any{
				"type": "object", "additionalProperties": false, "required": []string{"options", "duration_minutes"},
				"description": "A poll; a post with a poll carries no media.",
				"properties": map[string]any{
					"options":          map[string]any{"type": "array", "minItems": 2, "maxItems": 4, "items": map[string]any{"type": "string", "minLength": 1, "maxLength": 25}},
					"duration_minutes": map[string]any{"type": "integer", "minimum": 5, "maximum": 10080},
				},
			},
		}
	case Bluesky:
		props = map[string]any{
			"langs":     list("The text's languages (BCP 47 tags).", 3, map[string]any{"type": "string"}),
			"labels":    list("Self-labels of the post's content.", 0, map[string]any{"type": "string", "enum": BlueskyLabels}),
			"link":      cardLink("The page a post without media shows as a card (title, description, thumbnail read from the page); default: the text's first link."),
			"link_card": boolean("Whether the post carries its link card (default true)."),
		}
	case Threads:
		props = map[string]any{
			"reply_control": enum("Who can reply; default everyone.", ThreadsReplyControls),
			"topic_tag":     map[string]any{"type": "string", "minLength": 1, "maxLength": 50, "pattern": "^[^.&]+$", "description": "The post's topic."},
			"link":          cardLink("The link_attachment of a text post; default: the text's first link."),
			"link_card":     boolean("Whether the link is the post's link_attachment (default true); false: none (Threads may still preview a link of the text itself)."),
		}
	default:
		return nil
	}
	return map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"title":                p.Name() + " options",
		"type":                 "object",
		"additionalProperties": false,
		"properties":           props,
	}
}
