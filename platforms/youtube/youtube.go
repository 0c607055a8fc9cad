// Package youtube publishes videos to YouTube through the YouTube Data API v3 (networks.md §7).
//
// A post is exactly one video. Its title is the first line of the post's text (at most 100
// characters) and its description the whole text (at most 5,000 bytes); neither may contain < or
// >. The video is uploaded with the resumable protocol of videos.insert: POST
// /upload/youtube/v3/videos?uploadType=resumable&part=snippet,status opens a session, the bytes
// follow in PUT chunks (multiples of 256 KiB) with Content-Range, 308 answers say how much arrived,
// and a failed intermediate chunk is resumed after a status query (an empty PUT with
// "Content-Range: bytes */N"). The answer to the last chunk creates the video, so a failure of that
// call leaves the outcome unknown (platforms.Unknown) and Lookup resolves it. After the upload the
// adapter polls videos.list?part=status,processingDetails until YouTube processed the video.
//
// Accounts connect with Google OAuth 2.0 (access_type=offline, PKCE S256); the channel comes from
// channels.list?mine=true. Quota is YouTube's only rate signal: 403 quotaExceeded, which resets at
// midnight Pacific time.
package youtube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// Production hosts.
const (
	DefaultBaseURL   = "https://www.googleapis.com"
	DefaultUploadURL = "https://www.googleapis.com"
	DefaultAuthURL   = "https://accounts.google.com"
	DefaultTokenURL  = "https://oauth2.googleapis.com"
)

// YouTube's content rules (networks.md §7.2).
const (
	MaxTitleChars    = 100
	MaxDescBytes     = 5000
	MaxVideoBytes    = 256 << 30
	defaultChunkSize = 8 << 20 // a multiple of 256 KiB, as the resumable protocol asks
	chunkGranule     = 256 << 10
	maxResumes       = 3
	maxProcessing    = 15 * time.Minute
	defaultPoll      = 5 * time.Second
	maxPoll          = 30 * time.Second
)

// Adapter is the YouTube adapter. It is stateless and safe for concurrent use.
type Adapter struct {
	cfg                      platforms.Config
	hc                       *http.Client
	api, upload, auth, token string
	// chunkSize is the size of the upload's PUT chunks (a multiple of 256 KiB).
	chunkSize int64
}

var (
	_ platforms.Adapter   = (*Adapter)(nil)
	_ platforms.Connector = (*Adapter)(nil)
)

// New returns an adapter for cfg. Empty URLs mean YouTube's production hosts; with a BaseURL set,
// the OAuth token and revoke endpoints are served from it too (as the simulator does), else from
// oauth2.googleapis.com.
func New(cfg platforms.Config) *Adapter {
	a := &Adapter{cfg: cfg, hc: cfg.HTTPClient, chunkSize: defaultChunkSize}
	if a.hc == nil {
		a.hc = platforms.DefaultHTTPClient()
	}
	a.api = strings.TrimRight(or(cfg.BaseURL, DefaultBaseURL), "/")
	a.upload = strings.TrimRight(or(cfg.UploadURL, DefaultUploadURL), "/")
	a.auth = strings.TrimRight(or(cfg.AuthURL, DefaultAuthURL), "/")
	a.token = strings.TrimRight(or(cfg.BaseURL, DefaultTokenURL), "/")
	return a
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Platform names the network.
func (a *Adapter) Platform() platforms.Platform { return platforms.YouTube }

func invalid(format string, args ...any) error {
	return platforms.Errorf(platforms.YouTube, platforms.Invalid, 0, format, args...)
}

// Title is the video title Herald derives from a post's text: its first line, trimmed.
func Title(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	return strings.TrimSpace(line)
}

// Validate checks YouTube's rules: exactly one video, a title (the text's first line) of 1 to 100
// characters, a description (the whole text) of at most 5,000 bytes, no < or > in either.
func (a *Adapter) Validate(p platforms.Post) error {
	switch {
	case len(p.Media) == 0:
		return invalid("YouTube needs a video; the post has none")
	case p.Media[0].IsDocument():
		return platforms.CheckMediaShape(platforms.YouTube, a.MediaLimits(), p.Media)
	case len(p.Media) > 1:
		return invalid("YouTube takes exactly one video per post; the post has %d media files", len(p.Media))
	case !p.Media[0].IsVideo():
		return invalid("YouTube takes videos only; %q is %s", p.Media[0].Filename, p.Media[0].ContentType)
	case p.Media[0].Size > MaxVideoBytes:
		return invalid("the video is %d bytes; YouTube allows 256 GB", p.Media[0].Size)
	}
	title := Title(p.Text)
	switch n := utf8.RuneCountInString(title); {
	case n == 0:
		return invalid("YouTube needs a title: the first line of the text becomes the title and it is empty")
	case n > MaxTitleChars:
		return invalid("the title (the text's first line) is %d characters; YouTube allows %d", n, MaxTitleChars)
	}
	if n := len(p.Text); n > MaxDescBytes {
		return invalid("text is %d bytes; YouTube allows %d in a description", n, MaxDescBytes)
	}
	if strings.ContainsAny(p.Text, "<>") {
		return invalid("YouTube does not allow < or > in a title or description")
	}
	return nil
}

// Publish uploads the video and waits until YouTube processed it.
func (a *Adapter) Publish(ctx context.Context, c platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	m := p.Media[0]
	rc, err := m.Open(ctx)
	if err != nil {
		return platforms.Result{}, &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Transient, Message: "opening the video failed", Err: err}
	}
	defer rc.Close()
	var src io.Reader = rc
	total := m.Size
	if total <= 0 {
		data, err := io.ReadAll(io.LimitReader(rc, 4<<30))
		if err != nil {
			return platforms.Result{}, &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Transient, Message: "reading the video failed", Err: err}
		}
		src, total = bytes.NewReader(data), int64(len(data))
		if total == 0 {
			return platforms.Result{}, invalid("the video is empty")
		}
	}
	session, err := a.startUpload(ctx, c, p, m, total)
	if err != nil {
		return platforms.Result{}, err
	}
	v, err := a.uploadVideo(ctx, session, src, total, m.ContentType)
	if err != nil {
		return platforms.Result{}, err
	}
	pub := platforms.Publication{ID: v.ID, URL: "https://www.youtube.com/watch?v=" + url.QueryEscape(v.ID)}
	if err := a.awaitProcessing(ctx, c, v.ID); err != nil {
		return platforms.Result{}, err
	}
	if o, _ := p.Options.(*platforms.YouTubeOptions); o != nil && o.PlaylistID != "" {
		// The video is published whatever happens here: a failure to add it to the playlist is
		// logged and never fails (or repeats) the upload.
		if err := a.addToPlaylist(ctx, c, o.PlaylistID, v.ID); err != nil {
			slog.Warn("youtube: the video was published but could not be added to its playlist", "error", err)
		}
	}
	return platforms.Result{Publication: pub}, nil
}

// addToPlaylist is playlistItems.insert (50 units).
func (a *Adapter) addToPlaylist(ctx context.Context, c platforms.Credentials, playlistID, videoID string) error {
	body, _ := json.Marshal(map[string]any{"snippet": map[string]any{"playlistId": playlistID, "resourceId": map[string]string{"kind": "youtube#video", "videoId": videoID}}})
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodPost, URL: a.api + "/youtube/v3/playlistItems?part=snippet", Body: body, ContentType: "application/json; charset=UTF-8", Bearer: c.AccessToken})
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return classify(r, false)
	}
	return nil
}

// maxListPages bounds the pages of a choices listing (50 items a page).
const maxListPages = 4

// Choices reads the video categories of the channel's region and the channel's playlists
// (platforms.ChoiceReader): videoCategories.list and playlists.list, one unit each.
func (a *Adapter) Choices(ctx context.Context, c platforms.Credentials) (platforms.Choices, error) {
	var out platforms.Choices
	var cats struct {
		Items []struct {
			ID      string `json:"id"`
			Snippet struct {
				Title      string `json:"title"`
				Assignable bool   `json:"assignable"`
			} `json:"snippet"`
		} `json:"items"`
	}
	region := c.Extra["region"]
	if region == "" {
		region = "US"
	}
	if _, err := a.get(ctx, c, "/youtube/v3/videoCategories", url.Values{"part": {"snippet"}, "regionCode": {region}}, &cats); err != nil {
		return out, err
	}
	for _, it := range cats.Items {
		if it.Snippet.Assignable {
			out.Categories = append(out.Categories, platforms.Choice{ID: it.ID, Name: it.Snippet.Title})
		}
	}
	token := ""
	for page := 0; page < maxListPages; page++ {
		var lists struct {
			Items []struct {
				ID      string `json:"id"`
				Snippet struct {
					Title string `json:"title"`
				} `json:"snippet"`
			} `json:"items"`
			NextPageToken string `json:"nextPageToken"`
		}
		q := url.Values{"part": {"snippet"}, "mine": {"true"}, "maxResults": {"50"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		if _, err := a.get(ctx, c, "/youtube/v3/playlists", q, &lists); err != nil {
			return out, err
		}
		for _, it := range lists.Items {
			out.Playlists = append(out.Playlists, platforms.Choice{ID: it.ID, Name: it.Snippet.Title})
		}
		if token = lists.NextPageToken; token == "" {
			break
		}
	}
	return out, nil
}

// MediaLimits are YouTube's (platforms.MediaLimiter): one video.
func (a *Adapter) MediaLimits() platforms.MediaLimits {
	return platforms.MediaLimits{Required: true, MaxItems: 1, MaxVideos: 1, Types: []string{"video/mp4", "video/quicktime", "video/webm"}, MaxVideoBytes: MaxVideoBytes, VideoAlone: true}
}

// videoResource is the video resource of videos.insert for the post and its options: the title
// (the options', else the text's first line), the text as the description, the category (default
// 22, People & Blogs), tags, the privacy (default public; projects Google has not audited get
// private videos whatever is asked) and the audience declaration when the options make one.
func videoResource(p platforms.Post, o *platforms.YouTubeOptions) map[string]any {
	if o == nil {
		o = &platforms.YouTubeOptions{}
	}
	snippet := map[string]any{"title": platforms.YouTubeTitle(o, p.Text), "description": p.Text, "categoryId": "22"}
	if o.CategoryID != "" {
		snippet["categoryId"] = o.CategoryID
	}
	if len(o.Tags) > 0 {
		snippet["tags"] = o.Tags
	}
	status := map[string]any{"privacyStatus": "public"}
	if o.PrivacyStatus != "" {
		status["privacyStatus"] = o.PrivacyStatus
	}
	if o.MadeForKids != nil {
		status["selfDeclaredMadeForKids"] = *o.MadeForKids
	}
	return map[string]any{"snippet": snippet, "status": status}
}

// startUpload opens a resumable session and returns its URL.
func (a *Adapter) startUpload(ctx context.Context, c platforms.Credentials, p platforms.Post, m platforms.Media, total int64) (string, error) {
	o, _ := p.Options.(*platforms.YouTubeOptions)
	body, _ := json.Marshal(videoResource(p, o))
	u := a.upload + "/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status"
	if o != nil && o.NotifySubscribers != nil {
		u += "&notifySubscribers=" + strconv.FormatBool(*o.NotifySubscribers)
	}
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodPost, URL: u, Body: body, ContentType: "application/json; charset=UTF-8", Bearer: c.AccessToken,
		Header: http.Header{"X-Upload-Content-Length": {strconv.FormatInt(total, 10)}, "X-Upload-Content-Type": {m.ContentType}}})
	if err != nil {
		return "", err
	}
	if r.Status != http.StatusOK && r.Status != http.StatusCreated {
		return "", classify(r, false)
	}
	loc := r.Header.Get("Location")
	if loc == "" {
		return "", invalidBody(r.Status, "no Location header with the upload session", false)
	}
	base, _ := url.Parse(u)
	ref, err := url.Parse(loc)
	if err != nil {
		return "", invalidBody(r.Status, "the upload session URL does not parse", false)
	}
	return base.ResolveReference(ref).String(), nil
}

// video is the part of the video resource the adapter reads.
type video struct {
	ID     string `json:"id"`
	Status struct {
		UploadStatus    string `json:"uploadStatus"`
		FailureReason   string `json:"failureReason"`
		RejectionReason string `json:"rejectionReason"`
	} `json:"status"`
	ProcessingDetails struct {
		ProcessingStatus        string `json:"processingStatus"`
		ProcessingFailureReason string `json:"processingFailureReason"`
		ProcessingProgress      struct {
			TimeLeftMs string `json:"timeLeftMs"`
		} `json:"processingProgress"`
	} `json:"processingDetails"`
}

// uploadVideo sends the bytes in chunks. pending holds what was read but not yet acknowledged,
// starting at byte pos; a 308 moves pos to what YouTube has; an intermediate chunk that fails is
// resumed after a status query.
func (a *Adapter) uploadVideo(ctx context.Context, session string, src io.Reader, total int64, ctype string) (*video, error) {
	var (
		pending []byte
		pos     int64
		read    int64
		resumes int
	)
	for {
		if want := a.chunkSize - int64(len(pending)); want > 0 && read < total {
			n := min(want, total-read)
			buf := make([]byte, n)
			if _, err := io.ReadFull(src, buf); err != nil {
				return nil, &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Permanent, Message: "reading the video failed (is its size right?)", Err: err}
			}
			pending = append(pending, buf...)
			read += n
		}
		if len(pending) == 0 {
			// YouTube acknowledged every byte without naming the video: ask the session.
			if _, v, err := a.queryUpload(ctx, session, total); err != nil || v != nil {
				return v, err
			}
			return nil, invalidBody(http.StatusPermanentRedirect, "the session has every byte but names no video", true)
		}
		end := pos + int64(len(pending))
		final := end == total
		r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodPut, URL: session, Body: pending, ContentType: ctype, Create: final,
			Header: http.Header{"Content-Range": {fmt.Sprintf("bytes %d-%d/%d", pos, end-1, total)}}})
		failed := err
		if err == nil {
			switch {
			case r.Status == http.StatusOK || r.Status == http.StatusCreated:
				return parseVideo(r, true)
			case r.Status == http.StatusPermanentRedirect:
				ack, ok := acknowledged(r.Header)
				if !ok || ack < pos || ack > end {
					return nil, invalidBody(r.Status, "a 308 whose Range does not fit the chunk sent", false)
				}
				pending, pos = pending[ack-pos:], ack
				continue
			case r.Status >= 500 && !final:
				failed = classify(r, false)
			case r.Status == http.StatusNotFound || r.Status == http.StatusGone:
				return nil, &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Transient, Status: r.Status, Message: "the upload session expired; start the upload again"}
			default:
				return nil, classify(r, final)
			}
		} else if platforms.KindOf(err) == platforms.Unknown {
			return nil, err
		}
		// An intermediate chunk (or a last one that was not sent) failed: ask the session what it
		// has and go on from there.
		if resumes++; resumes > maxResumes {
			return nil, failed
		}
		ack, v, err := a.queryUpload(ctx, session, total)
		switch {
		case err != nil:
			return nil, err
		case v != nil:
			return v, nil
		case ack < pos || ack > end:
			return nil, &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Transient, Message: "the upload session lost bytes it had acknowledged"}
		}
		pending, pos = pending[ack-pos:], ack
	}
}

// queryUpload asks a session how many bytes it has (an empty PUT with "bytes */N"); v is the
// video when the upload already completed.
func (a *Adapter) queryUpload(ctx context.Context, session string, total int64) (ack int64, v *video, err error) {
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodPut, URL: session, Body: []byte{},
		Header: http.Header{"Content-Range": {fmt.Sprintf("bytes */%d", total)}}})
	if err != nil {
		return 0, nil, err
	}
	switch r.Status {
	case http.StatusOK, http.StatusCreated:
		v, err := parseVideo(r, true)
		return 0, v, err
	case http.StatusPermanentRedirect:
		ack, ok := acknowledged(r.Header)
		if !ok {
			return 0, nil, invalidBody(r.Status, "a 308 with an unreadable Range", false)
		}
		return ack, nil, nil
	}
	return 0, nil, classify(r, false)
}

// acknowledged reads a 308's "Range: bytes=0-N" as N+1 bytes (no Range: none yet).
func acknowledged(h http.Header) (int64, bool) {
	rg := h.Get("Range")
	if rg == "" {
		return 0, true
	}
	spec, ok := strings.CutPrefix(rg, "bytes=0-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(spec, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n + 1, true
}

func parseVideo(r *platforms.Answer, create bool) (*video, error) {
	var v video
	if err := json.Unmarshal(r.Body, &v); err != nil || v.ID == "" {
		return nil, invalidBody(r.Status, "no video id", create)
	}
	return &v, nil
}

// awaitProcessing polls videos.list until YouTube processed the video. The video exists from the
// end of the upload on, so failures of the poll itself do not fail the publication: after a few
// of them, or after maxProcessing, the adapter stops waiting. A video YouTube failed or rejected
// is a Permanent error.
func (a *Adapter) awaitProcessing(ctx context.Context, c platforms.Credentials, id string) error {
	deadline := time.Now().Add(maxProcessing)
	errs := 0
	for time.Now().Before(deadline) {
		wait := a.cfg.PollInterval
		r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodGet, Bearer: c.AccessToken,
			URL: a.api + "/youtube/v3/videos?part=status,processingDetails&id=" + url.QueryEscape(id)})
		if err == nil && r.Status != http.StatusOK {
			err = classify(r, false)
		}
		var list struct {
			Items []video `json:"items"`
		}
		if err == nil && json.Unmarshal(r.Body, &list) != nil {
			err = invalidBody(r.Status, "not a video list", false)
		}
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			if errs++; errs >= 3 {
				return nil
			}
		case len(list.Items) == 0:
			if errs++; errs >= 3 {
				return nil
			}
		default:
			v := list.Items[0]
			switch {
			case v.Status.UploadStatus == "processed" || v.ProcessingDetails.ProcessingStatus == "succeeded":
				return nil
			case v.Status.UploadStatus == "failed" || v.ProcessingDetails.ProcessingStatus == "failed":
				return &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Permanent, Code: "processingFailed",
					Message: "YouTube could not process the video: " + or(v.Status.FailureReason, v.ProcessingDetails.ProcessingFailureReason)}
			case v.Status.UploadStatus == "rejected":
				return &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Permanent, Code: "rejected",
					Message: "YouTube rejected the video: " + v.Status.RejectionReason}
			case v.Status.UploadStatus == "deleted":
				return &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Permanent, Code: "deleted", Message: "the video was deleted while it was processed"}
			}
			if wait == 0 {
				if ms, err := strconv.ParseInt(v.ProcessingDetails.ProcessingProgress.TimeLeftMs, 10, 64); err == nil && ms > 0 {
					wait = min(max(time.Duration(ms)*time.Millisecond, time.Second), maxPoll)
				}
			}
		}
		if wait == 0 {
			wait = defaultPoll
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	return nil
}
