package api

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/campaign"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Campaigns (docs/campaigns.md): up to a thousand posts submitted, validated and committed
// together, followed on one stream, retried and cancelled together.
const (
	campaignsPath      = "/campaigns"
	campaignStreamPath = "/campaigns/:id/stream"
	// MaxCampaignPosts caps the posts of one campaign.
	MaxCampaignPosts = campaign.MaxPosts
	// MaxCampaignBody caps a campaign's body, JSON or CSV: a thousand posts of several hundred
	// characters each fit with room to spare.
	MaxCampaignBody = 8 << 20
	// maxCampaignName caps a campaign's name, in characters.
	maxCampaignName = 200
	// maxFailedTargets caps the failed targets GET /v1/campaigns/:id lists.
	maxFailedTargets = 1000
)

// CampaignStreamRoute and DashboardCampaignStreamRoute are the campaign stream on each door
// (server.Config's LongRunning).
const (
	CampaignStreamRoute          = V1Prefix + campaignStreamPath
	DashboardCampaignStreamRoute = DashboardPrefix + campaignStreamPath
)

// BodyLimits are the routes whose bodies may exceed the server's default cap, with their caps
// (server.Config's BodyLimits).
func BodyLimits() map[string]int64 {
	return map[string]int64{V1Prefix + campaignsPath: MaxCampaignBody, DashboardPrefix + campaignsPath: MaxCampaignBody}
}

// campaignRequest is POST /v1/campaigns as read, before its posts are checked.
type campaignRequest struct {
	name   string
	mode   string
	dryRun bool
	csv    bool
	rows   []*campaignRow
}

// campaignRow is one post of a campaign as read: its fields, and what was wrong with them.
type campaignRow struct {
	content          *string
	platforms, media []string
	// hasPlatforms and hasMedia say that the field was read without error.
	hasPlatforms, hasMedia bool
	scheduledAt, zone      *string
	errs                   []string
}

// RowErrors are a bad post's errors: Row is its 1-based position in posts, or its 1-based data
// row in the CSV (the header is not counted).
type RowErrors struct {
	Row    int      `json:"row"`
	Errors []string `json:"errors"`
}

// CampaignAccepted is the 202 answer of POST /v1/campaigns.
type CampaignAccepted struct {
	CampaignID string           `json:"campaign_id"`
	Posts      []CampaignPostID `json:"posts"`
	StreamURL  string           `json:"stream_url"`
}

// CampaignPostID is a post of a new campaign, in the order of the request: its id, and its job's
// tracking id when the campaign publishes at once.
type CampaignPostID struct {
	PostID     string `json:"post_id"`
	TrackingID string `json:"tracking_id,omitempty"`
}

// CampaignDryRun is the 200 answer of a valid dry run: what the campaign would create.
type CampaignDryRun struct {
	DryRun  bool   `json:"dry_run"`
	Valid   bool   `json:"valid"`
	Publish string `json:"publish"`
	Posts   int    `json:"posts"`
	// Targets counts the posts' connected accounts; ByPlatform splits them by network.
	Targets    int            `json:"targets"`
	ByPlatform map[string]int `json:"by_platform"`
	Rows       []RowErrors    `json:"rows"`
}

var campaignModes = []string{persistence.CampaignNow, persistence.CampaignSchedule, persistence.CampaignDraft}

// campaignLocation and campaignStreamURL are a campaign's links through the request's door.
func campaignLocation(c *echo.Context, id string) string { return door(c) + campaignsPath + "/" + id }

func campaignStreamURL(c *echo.Context, id string) string { return campaignLocation(c, id) + "/stream" }

// createCampaign serves POST /v1/campaigns: JSON, or CSV with Content-Type text/csv.
func (h *handlers) createCampaign(c *echo.Context) error {
	raw, err := readRawLimit(c.Request(), MaxCampaignBody)
	if err != nil {
		return err
	}
	req, err := readCampaign(c, raw)
	if err != nil {
		return err
	}
	if req.dryRun {
		posts, err := h.checkCampaign(c, req)
		if err != nil {
			return err
		}
		if err := h.checkCampaignQuota(c, req.mode, len(posts)); err != nil {
			return err
		}
		if err := h.campaignTooLarge(req.mode, posts); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, dryRunReport(req.mode, posts))
	}
	// The Idempotency-Key's fingerprint covers what the request says: its body, and for a CSV
	// what its query says (name and publish, in whatever order and spelling).
	fp := append([]byte("json\x00"), raw...)
	if req.csv {
		fp = append([]byte("csv\x00"+req.name+"\x00"+req.mode+"\x00"), raw...)
	}
	return h.publishFlow(c, fp, func(idem *post.Idempotency, fingerprint []byte) error {
		if req.mode == persistence.CampaignNow {
			if err := h.backlogFull(); err != nil {
				return err
			}
		}
		posts, err := h.checkCampaign(c, req)
		if err != nil {
			return err
		}
		if err := h.campaignBacklog(req.mode, posts); err != nil {
			return err
		}
		id := uuid.Must(uuid.NewV7()).String()
		user := server.Principal(c).User.ID
		m := &campaign.Create{Campaign: &persistence.Campaign{UserID: user, Name: req.name, Publish: req.mode, CreatedAt: h.Now().UTC()},
			Posts: posts, Idempotency: idem}
		if req.mode != persistence.CampaignDraft {
			m.Quota = h.quota(c)
		}
		acc := &CampaignAccepted{CampaignID: id, Posts: make([]CampaignPostID, len(posts)), StreamURL: campaignStreamURL(c, id)}
		for i, p := range posts {
			acc.Posts[i].PostID = p.ID
			if req.mode == persistence.CampaignNow {
				jobID := uuid.Must(uuid.NewV7()).String()
				m.JobIDs = append(m.JobIDs, jobID)
				acc.Posts[i].TrackingID = jobID
			}
		}
		body, err := json.Marshal(acc)
		if err != nil {
			return err
		}
		if idem != nil {
			idem.Record = &persistence.IdempotencyRecord{Fingerprint: fingerprint, Status: http.StatusAccepted, Body: body,
				Location: campaignLocation(c, id), CreatedAt: h.Now().UTC()}
		}
		if _, err := ask[*campaign.CreateReply](h, c, h.Campaigns.To(id), m); err != nil {
			return h.lifecycleError(c, err)
		}
		c.Response().Header().Set("Location", campaignLocation(c, id))
		return c.JSONBlob(http.StatusAccepted, body)
	})
}

// readCampaign reads the request's form: JSON, or CSV (text/csv).
func readCampaign(c *echo.Context, raw []byte) (*campaignRequest, error) {
	ct := c.Request().Header.Get("Content-Type")
	if ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err == nil && mt == "text/csv" {
			if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
				return nil, apierr.Validation("Content-Type: a CSV campaign is UTF-8 (charset=%s is not taken)", truncate(cs, 32))
			}
			return readCampaignCSV(c, raw)
		}
	}
	return readCampaignJSON(raw)
}

// offsetIn is where sub, a subslice of body, starts in body.
func offsetIn(body, sub []byte) int { return cap(body) - cap(sub) }

// readCampaignJSON reads {name?, posts: [...], publish, dry_run?}. The body's encoding is
// checked member by member, and each post's on its own, so that a fault in a post is that post's
// error.
func readCampaignJSON(raw []byte) (*campaignRequest, error) {
	doc := bytes.TrimSpace(raw)
	if len(doc) == 0 || doc[0] != '{' || !json.Valid(doc) {
		_, err := parseObject(raw)
		if err == nil {
			err = apierr.Validation("Malformed JSON")
		}
		return nil, err
	}
	o := splitObject(doc)
	for name, v := range o {
		if name == "posts" {
			continue
		}
		if _, reason, bad := encodingFault(v, offsetIn(raw, v)); bad {
			return nil, apierr.Validation("%s: %s", truncate(name, 64), reason)
		}
	}
	req := &campaignRequest{}
	if err := req.readOptions(o.str, func(field string) (bool, error) {
		v, ok := o[field]
		if !ok {
			return false, nil
		}
		switch string(bytes.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, typeError(field, "boolean", v)
	}); err != nil {
		return nil, err
	}
	items, ok := o["posts"]
	if !ok {
		return nil, apierr.Validation("posts: Required")
	}
	if jsonType(items) != "array" {
		return nil, typeError("posts", "array", items)
	}
	elems := splitArray(items)
	if err := checkCampaignSize(len(elems), "posts"); err != nil {
		return nil, err
	}
	req.rows = make([]*campaignRow, len(elems))
	for i, e := range elems {
		req.rows[i] = readJSONRow(raw, e)
	}
	return req, nil
}

// readOptions reads name, publish and dry_run through the request form's readers.
func (r *campaignRequest) readOptions(str func(string, bool) (*string, error), boolean func(string) (bool, error)) error {
	name, err := str("name", false)
	if err != nil {
		return err
	}
	if name != nil {
		if err := platforms.CheckText(*name); err != nil {
			return apierr.Validation("name: %s", err.Error())
		}
		if n := utf8.RuneCountInString(*name); n > maxCampaignName {
			return apierr.Validation("name: is %d characters; at most %d are allowed", n, maxCampaignName)
		}
		r.name = strings.TrimSpace(*name)
	}
	mode, err := str("publish", false)
	if err != nil {
		return err
	}
	if mode == nil {
		return apierr.Validation("publish: Required: one of %s", strings.Join(campaignModes, ", "))
	}
	if !slices.Contains(campaignModes, *mode) {
		return apierr.Validation("publish: must be one of %s (got %q)", strings.Join(campaignModes, ", "), truncate(*mode, 32))
	}
	r.mode = *mode
	r.dryRun, err = boolean("dry_run")
	return err
}

func checkCampaignSize(n int, what string) error {
	switch {
	case n == 0:
		return apierr.Validation("%s: a campaign has at least one post; this one has none", what)
	case n > MaxCampaignPosts:
		return apierr.Validation("%s: a campaign has at most %d posts; this one has %d", what, MaxCampaignPosts, n)
	}
	return nil
}

// readJSONRow reads one element of posts; what is wrong with it becomes its errors.
func readJSONRow(body, e []byte) *campaignRow {
	row := &campaignRow{}
	if jsonType(e) != "object" {
		row.errs = append(row.errs, "Expected object, received "+jsonType(e))
		return row
	}
	if i, reason, bad := encodingFault(e, offsetIn(body, e)); bad {
		if name := memberAt(e, i); name != "" {
			row.errs = append(row.errs, name+": "+reason)
		} else {
			row.errs = append(row.errs, "the post "+reason)
		}
		return row
	}
	o := splitObject(e)
	var err error
	if row.content, err = o.str("content", true); err != nil {
		row.fail(err)
	}
	if row.platforms, err = o.uuids("platforms", true); err != nil {
		row.fail(err)
	} else {
		row.hasPlatforms = true
	}
	if row.media, err = o.uuids("media", false); err != nil {
		row.fail(err)
	} else {
		row.hasMedia = true
	}
	if row.scheduledAt, err = o.str("scheduledAt", false); err != nil {
		row.fail(err)
	}
	if row.zone, err = o.str("timezone", false); err != nil {
		row.fail(err)
	}
	return row
}

func (r *campaignRow) fail(err error) {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		r.errs = append(r.errs, ae.Message)
		return
	}
	r.errs = append(r.errs, err.Error())
}

// csvColumns are the columns a campaign's CSV may have, as its header names them (in any order,
// letter case aside); content and platforms are required.
var csvColumns = []string{"content", "platforms", "media", "scheduledAt", "timezone"}

// readCampaignCSV reads a CSV campaign (RFC 4180, UTF-8 with or without a byte order mark): a
// header row naming its columns, then one post per data row. name, publish and dry_run are query
// parameters.
func readCampaignCSV(c *echo.Context, raw []byte) (*campaignRequest, error) {
	q := c.Request().URL.Query()
	req := &campaignRequest{csv: true}
	if err := req.readOptions(func(field string, _ bool) (*string, error) {
		if !q.Has(field) {
			return nil, nil
		}
		v := q.Get(field)
		return &v, nil
	}, func(field string) (bool, error) {
		if !q.Has(field) {
			return false, nil
		}
		b, err := strconv.ParseBool(q.Get(field))
		if err != nil {
			return false, apierr.Validation("%s: Expected boolean (true or false), received %q", field, truncate(q.Get(field), 32))
		}
		return b, nil
	}); err != nil {
		return nil, err
	}
	raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	r := csv.NewReader(bytes.NewReader(raw))
	r.FieldsPerRecord = -1 // a row of another width is that row's error
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, apierr.Validation("the CSV is empty: a header row naming the columns (%s) and one data row per post are expected", strings.Join(csvColumns, ", "))
	}
	if err != nil {
		return nil, apierr.Validation("CSV header: %s", csvError(err))
	}
	cols, herrs := csvHeader(header)
	if len(herrs) > 0 {
		return nil, apierr.Validation("CSV header: %s", strings.Join(herrs, "; ")).WithDetails(map[string]any{"header": herrs, "rows": []RowErrors{}})
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// A row the CSV reader cannot take (a stray quote): nothing after it can be trusted.
			row := len(req.rows) + 1
			msg := csvError(err)
			return nil, apierr.Validation("CSV data row %d: %s", row, msg).
				WithDetails(map[string]any{"rows": []RowErrors{{Row: row, Errors: []string{"CSV: " + msg}}}})
		}
		if len(req.rows) == MaxCampaignPosts {
			return nil, apierr.Validation("CSV: a campaign has at most %d posts; this CSV has more data rows", MaxCampaignPosts)
		}
		req.rows = append(req.rows, csvRow(cols, len(header), rec))
	}
	if err := checkCampaignSize(len(req.rows), "CSV"); err != nil {
		return nil, err
	}
	return req, nil
}

// csvError is a CSV reader's error without its own prefix.
func csvError(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d, column %d: %s", pe.Line, pe.Column, pe.Err)
	}
	return err.Error()
}

// csvHeader maps each column of the header to its field, and says what is wrong with it.
func csvHeader(header []string) (map[string]int, []string) {
	cols := map[string]int{}
	var errs []string
	for i, name := range header {
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		n := strings.TrimSpace(name)
		known := ""
		for _, c := range csvColumns {
			if strings.EqualFold(n, c) {
				known = c
			}
		}
		switch {
		case !utf8.ValidString(n):
			errs = append(errs, fmt.Sprintf("column %d is not valid UTF-8", i+1))
		case known == "":
			errs = append(errs, fmt.Sprintf("unknown column %q (column %d); the columns are %s", truncate(n, 64), i+1, strings.Join(csvColumns, ", ")))
		case cols[known] != 0:
			errs = append(errs, fmt.Sprintf("column %s appears twice (columns %d and %d)", known, cols[known], i+1))
		default:
			cols[known] = i + 1
		}
	}
	for _, req := range []string{"content", "platforms"} {
		if cols[req] == 0 {
			errs = append(errs, fmt.Sprintf("the %s column is required", req))
		}
	}
	return cols, errs
}

// csvRow reads one data row: ids in a cell are separated by spaces; an empty optional cell is
// an absent field.
func csvRow(cols map[string]int, width int, rec []string) *campaignRow {
	row := &campaignRow{}
	if len(rec) != width {
		row.errs = append(row.errs, fmt.Sprintf("the row has %d fields; the header has %d", len(rec), width))
		return row
	}
	cell := func(name string) (string, bool) {
		i := cols[name]
		if i == 0 {
			return "", false
		}
		v := rec[i-1]
		if !utf8.ValidString(v) {
			row.errs = append(row.errs, name+": is not valid UTF-8; send the CSV as UTF-8")
			return "", false
		}
		return v, true
	}
	if v, ok := cell("content"); ok {
		row.content = &v
	}
	ids := func(name string) ([]string, bool) {
		v, ok := cell(name)
		if !ok {
			return nil, false
		}
		fields := strings.Fields(v)
		out := make([]string, 0, len(fields))
		for i, f := range fields {
			u, err := uuid.Parse(f)
			if err != nil || len(f) != 36 {
				row.errs = append(row.errs, fmt.Sprintf("%s: Invalid uuid (item %d is %q)", name, i, truncate(f, 64)))
				return nil, false
			}
			if slices.Contains(out, u.String()) {
				row.errs = append(row.errs, fmt.Sprintf("%s: duplicate id %s", name, u))
				return nil, false
			}
			out = append(out, u.String())
		}
		return out, true
	}
	row.platforms, row.hasPlatforms = ids("platforms")
	if row.media, row.hasMedia = ids("media"); row.hasMedia && len(row.media) == 0 {
		row.media = nil
	}
	if v, ok := cell("scheduledAt"); ok && strings.TrimSpace(v) != "" {
		row.scheduledAt = &v
	}
	if v, ok := cell("timezone"); ok && strings.TrimSpace(v) != "" {
		row.zone = &v
	}
	return row
}

// checkCampaign checks every post of a campaign by the one check of a post (check.go), as a
// single publish, schedule or draft is: the post's rules, the caller's own connected accounts and
// confirmed media, and each target network's own rules unless the campaign stores drafts; and
// its time when the campaign schedules. It returns the posts, ready to commit, or a
// 400 listing every bad post's errors by row.
func (h *handlers) checkCampaign(c *echo.Context, req *campaignRequest) ([]*persistence.Post, error) {
	user := server.Principal(c).User
	media := mediaCache{}
	posts := make([]*persistence.Post, len(req.rows))
	var bad []RowErrors
	for i, row := range req.rows {
		p, errs, err := h.checkCampaignRow(c, user, req.mode, row, media)
		if err != nil {
			return nil, err
		}
		if len(errs) > 0 {
			bad = append(bad, RowErrors{Row: i + 1, Errors: errs})
			continue
		}
		posts[i] = p
	}
	if len(bad) > 0 {
		what, first := "posts", "post"
		if req.csv {
			what, first = "data rows", "data row"
		}
		msg := fmt.Sprintf("%d of %d %s are invalid and nothing was created; details.rows lists every error by row (first: %s %d: %s)",
			len(bad), len(req.rows), what, first, bad[0].Row, bad[0].Errors[0])
		return nil, apierr.Validation("%s", msg).WithDetails(map[string]any{"rows": bad})
	}
	return posts, nil
}

// checkCampaignRow checks one post by the one check of a post (checkPost), the networks' rules
// included unless the campaign stores drafts; errs are its errors, err a failure to read the
// store.
func (h *handlers) checkCampaignRow(c *echo.Context, user *persistence.User, mode string, row *campaignRow, cache mediaCache) (*persistence.Post, []string, error) {
	var later []string
	var at *time.Time
	switch {
	case mode == persistence.CampaignSchedule && row.scheduledAt == nil:
		later = append(later, `scheduledAt: Required: a campaign with publish "schedule" needs a time for every post`)
	case mode == persistence.CampaignSchedule:
		t, err := ParseScheduledAt(*row.scheduledAt, row.zone, user.Timezone)
		if err == nil {
			err = checkScheduleWindow(t, h.Now())
		}
		if err != nil {
			later = append(later, err.Error())
		} else {
			at = &t
		}
	case row.scheduledAt != nil:
		later = append(later, `scheduledAt: only a campaign with publish "schedule" takes a time`)
	case row.zone != nil:
		later = append(later, `timezone: only a campaign with publish "schedule" takes a time zone`)
	}
	content := ""
	if row.content != nil {
		content = *row.content
	}
	s := &submission{content: &content, media: row.media, whole: true, publish: mode != persistence.CampaignDraft, prior: row.errs, later: later}
	if row.hasPlatforms {
		s.accounts = row.platforms
	}
	checked, errs, err := h.checkPost(c, user.ID, s, cache)
	if err != nil {
		return nil, nil, err
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}
	return &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user.ID, Content: content, Status: persistence.PostDraft,
		MediaIDs: append([]string{}, row.media...), Targets: checked.targets, ScheduledAt: at}, nil, nil
}

// checkCampaignQuota answers a dry run as the free plan's quota would answer the campaign.
func (h *handlers) checkCampaignQuota(c *echo.Context, mode string, n int) error {
	q := h.quota(c)
	if q == nil || mode == persistence.CampaignDraft {
		return nil
	}
	used := 0
	_ = h.Store.View(func(tx *persistence.Tx) error {
		used = tx.QuotaUsed(server.Principal(c).User.ID, q.Month)
		return nil
	})
	if used+n > q.Limit {
		return h.lifecycleError(c, &post.QuotaExceededError{Limit: q.Limit, Used: used, Month: q.Month, Requested: n})
	}
	return nil
}

// campaignTargets counts the targets of a campaign's posts: the publishes it starts.
func campaignTargets(posts []*persistence.Post) int {
	n := 0
	for _, p := range posts {
		n += len(p.Targets)
	}
	return n
}

// campaignTooLarge refuses a campaign that publishes now with more targets than the server takes
// in hand at once (--max-job-backlog, job.Backlog): it could never be accepted whole, so it is 400
// limit_exceeded rather than a 503 to retry. A dry run reports it as the real request would.
func (h *handlers) campaignTooLarge(mode string, posts []*persistence.Post) error {
	limit := h.JobBacklog.Limit()
	if mode != persistence.CampaignNow || limit == 0 {
		return nil
	}
	if n := campaignTargets(posts); n > limit {
		return apierr.New(http.StatusBadRequest, apierr.CodeLimitExceeded,
			"a campaign that publishes now starts its %d targets at once, more than the %d publishes this server takes in hand; "+
				"nothing was created: split it into campaigns of at most %d targets, or schedule it", n, limit, limit).
			WithDetails(map[string]any{"limit": limit, "targets": n})
	}
	return nil
}

// campaignBacklog holds a campaign that publishes now to the publish backlog as a whole, the way
// backlogFull holds one publish: its targets are accepted all together only when they fit under
// the limit beside the publishes already in hand, else the campaign is refused (503, Retry-After)
// and nothing of it is written. Two campaigns checked at the same instant may both pass, as two
// publishes may: the limit bounds the backlog to within the write requests served at once.
func (h *handlers) campaignBacklog(mode string, posts []*persistence.Post) error {
	if err := h.campaignTooLarge(mode, posts); err != nil || mode != persistence.CampaignNow || h.JobBacklog.Limit() == 0 {
		return err
	}
	n, inHand, limit := campaignTargets(posts), h.JobBacklog.Len(), h.JobBacklog.Limit()
	if inHand+n <= limit {
		return nil
	}
	return server.Overloaded(server.OverloadJobBacklog, fmt.Sprintf(
		"the server has %d publish jobs in hand and takes %d; this campaign's %d targets do not fit beside them; nothing was created; retry shortly",
		inHand, limit, n))
}

func dryRunReport(mode string, posts []*persistence.Post) *CampaignDryRun {
	r := &CampaignDryRun{DryRun: true, Valid: true, Publish: mode, Posts: len(posts), ByPlatform: map[string]int{}, Rows: []RowErrors{}}
	for _, p := range posts {
		for _, t := range p.Targets {
			r.Targets++
			r.ByPlatform[t.Platform]++
		}
	}
	return r
}

// CampaignListItem is a campaign in a list.
type CampaignListItem struct {
	ID      string  `json:"id"`
	Name    *string `json:"name"`
	Publish string  `json:"publish"`
	// Status is publishing (a post is publishing), scheduled (one is scheduled, none
	// publishing), draft (every post is a draft), cancelled (DELETE kept some posts, none is
	// open) or completed (every post took its outcome).
	Status string `json:"status"`
	// Posts counts the campaign's posts now (deleted ones are gone); Totals splits them by
	// status.
	Posts       int            `json:"posts"`
	Totals      map[string]int `json:"totals"`
	CreatedAt   time.Time      `json:"created_at"`
	CancelledAt *time.Time     `json:"cancelled_at"`
}

// CampaignDetail is GET /v1/campaigns/:id.
type CampaignDetail struct {
	CampaignListItem
	// ByPlatform counts the targets of each network by status.
	ByPlatform map[string]*PlatformTotals `json:"by_platform"`
	// FailedTargets lists the failed targets with their errors, in post order (at most
	// maxFailedTargets; FailedTargetsTruncated says when there are more).
	FailedTargets          []FailedTarget `json:"failed_targets"`
	FailedTargetsTruncated bool           `json:"failed_targets_truncated"`
	StreamURL              string         `json:"stream_url"`
}

// PlatformTotals are a network's targets in a campaign.
type PlatformTotals struct {
	Targets    int `json:"targets"`
	Pending    int `json:"pending"`
	Publishing int `json:"publishing"`
	Published  int `json:"published"`
	Failed     int `json:"failed"`
}

// FailedTarget is a failed target of a campaign's post.
type FailedTarget struct {
	PostID             string `json:"post_id"`
	ConnectedAccountID string `json:"connected_account_id"`
	Platform           string `json:"platform"`
	Error              string `json:"error"`
}

func campaignStatus(c *persistence.Campaign, counts persistence.CampaignCounts) string {
	switch {
	case counts.Of(persistence.PostPublishing) > 0:
		return "publishing"
	case counts.Of(persistence.PostScheduled) > 0:
		return "scheduled"
	case c.CancelledAt != nil:
		return "cancelled"
	case counts.Total() > 0 && counts.Total() == counts.Of(persistence.PostDraft):
		return "draft"
	}
	return "completed"
}

func campaignItem(c *persistence.Campaign, counts persistence.CampaignCounts) CampaignListItem {
	it := CampaignListItem{ID: c.ID, Publish: c.Publish, Status: campaignStatus(c, counts), Posts: counts.Total(),
		Totals: post.CampaignTotals(counts), CreatedAt: c.CreatedAt, CancelledAt: c.CancelledAt}
	if c.Name != "" {
		it.Name = &c.Name
	}
	return it
}

// campaignDetail reads a campaign with its posts' targets in one read transaction.
func campaignDetail(tx *persistence.Tx, c *persistence.Campaign, stream string) (*CampaignDetail, error) {
	counts := tx.CampaignCounts(c.ID)
	d := &CampaignDetail{CampaignListItem: campaignItem(c, counts), ByPlatform: map[string]*PlatformTotals{}, FailedTargets: []FailedTarget{}, StreamURL: stream}
	for _, cp := range tx.CampaignPosts(c.ID) {
		p, err := tx.Post(cp.PostID)
		if errors.Is(err, persistence.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, t := range p.Targets {
			pt := d.ByPlatform[t.Platform]
			if pt == nil {
				pt = &PlatformTotals{}
				d.ByPlatform[t.Platform] = pt
			}
			pt.Targets++
			switch t.Status {
			case persistence.TargetPublishing:
				pt.Publishing++
			case persistence.TargetPublished:
				pt.Published++
			case persistence.TargetFailed:
				pt.Failed++
				if len(d.FailedTargets) == maxFailedTargets {
					d.FailedTargetsTruncated = true
					continue
				}
				msg := ""
				if t.Error != nil {
					msg = *t.Error
				}
				d.FailedTargets = append(d.FailedTargets, FailedTarget{PostID: p.ID, ConnectedAccountID: t.AccountID, Platform: t.Platform, Error: msg})
			default:
				pt.Pending++
			}
		}
	}
	return d, nil
}

// ownCampaign reads the caller's campaign; another user's is not found, like a missing one.
func ownCampaign(tx *persistence.Tx, id, userID string) (*persistence.Campaign, error) {
	c, err := tx.Campaign(id)
	if errors.Is(err, persistence.ErrNotFound) || (err == nil && c.UserID != userID) {
		return nil, apierr.NotFound("campaign")
	}
	return c, err
}

func (h *handlers) getCampaign(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	var d *CampaignDetail
	if err := h.Store.View(func(tx *persistence.Tx) error {
		camp, err := ownCampaign(tx, id, server.Principal(c).User.ID)
		if err != nil {
			return err
		}
		d, err = campaignDetail(tx, camp, campaignStreamURL(c, id))
		return err
	}); err != nil {
		return h.campaignReadError(c, err)
	}
	return c.JSON(http.StatusOK, d)
}

func (h *handlers) campaignReadError(c *echo.Context, err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return h.storeError(c, err)
}

// listCampaigns serves GET /v1/campaigns: the caller's campaigns, newest first, paged like
// GET /v1/posts.
func (h *handlers) listCampaigns(c *echo.Context) error {
	page, err := queryInt(c, "page", 1, 1, 1_000_000)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	items := []CampaignListItem{}
	total := 0
	if err := h.Store.View(func(tx *persistence.Tx) error {
		list, n, err := tx.ListCampaigns(server.Principal(c).User.ID, (page-1)*limit, limit)
		if err != nil {
			return err
		}
		total = n
		for _, camp := range list {
			items = append(items, campaignItem(camp, tx.CampaignCounts(camp.ID)))
		}
		return nil
	}); err != nil {
		return h.storeError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{
		"data":       items,
		"pagination": map[string]int{"page": page, "limit": limit, "total": total, "total_pages": (total + limit - 1) / limit},
	})
}

// campaignOpTimeout bounds a retry's or a cancel's answer: the campaign asks each of up to a
// thousand posts, some at a time.
func (h *handlers) campaignOpTimeout() time.Duration { return max(h.AskTimeout, 30*time.Second) }

// CampaignRetried is the 202 answer of POST /v1/campaigns/:id/retry.
type CampaignRetried struct {
	CampaignID string            `json:"campaign_id"`
	Retried    []RetriedPost     `json:"retried"`
	Skipped    []SkippedPost     `json:"skipped"`
	Targets    int               `json:"targets"`
	StreamURL  string            `json:"stream_url"`
	Only       map[string]string `json:"only"`
}

// RetriedPost is a post published again: its new job, and how many targets it publishes.
type RetriedPost struct {
	PostID     string `json:"post_id"`
	TrackingID string `json:"tracking_id"`
	Targets    int    `json:"targets"`
}

// SkippedPost is a post with selected failed targets that was not published again, and why.
type SkippedPost struct {
	PostID string `json:"post_id"`
	Reason string `json:"reason"`
}

// retryCampaign serves POST /v1/campaigns/:id/retry {account_id?, platform?}: every failed
// target of the campaign's failed and partial posts is published again, or only those of one
// connected account or network, one new job per post.
func (h *handlers) retryCampaign(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	user := server.Principal(c).User.ID
	var only post.Only
	if len(bytes.TrimSpace(raw)) > 0 {
		o, err := parseObject(raw)
		if err != nil {
			return err
		}
		if v, ok := o["account_id"]; ok && jsonType(v) != "null" {
			s, err := o.str("account_id", false)
			if err != nil {
				return err
			}
			if only.AccountID, err = parseUUID("account_id", *s); err != nil {
				return err
			}
			if _, ok, err := h.Store.AccountPlatform(user, only.AccountID); err != nil {
				return h.storeError(c, err)
			} else if !ok {
				return apierr.AccountNotYours("account_id", only.AccountID)
			}
		}
		if v, ok := o["platform"]; ok && jsonType(v) != "null" {
			s, err := o.str("platform", false)
			if err != nil {
				return err
			}
			if !platforms.Platform(*s).Valid() {
				return apierr.Validation("platform: must be one of %s", platformNames())
			}
			only.Platform = *s
		}
	}
	// A retry publishes again: like a publish, it is refused while the backlog is full.
	if err := h.backlogFull(); err != nil {
		return err
	}
	r, err := actors.AskWithin[*campaign.RetryReply](c.Request().Context(), h.campaignOpTimeout(), h.Campaigns.To(id),
		&campaign.Retry{UserID: user, Only: only, Quota: h.quota(c)})
	if err != nil {
		return h.campaignError(c, err)
	}
	out := &CampaignRetried{CampaignID: id, Retried: make([]RetriedPost, 0, len(r.Retried)), Skipped: make([]SkippedPost, 0, len(r.Skipped)),
		StreamURL: campaignStreamURL(c, id), Only: map[string]string{}}
	if only.AccountID != "" {
		out.Only["account_id"] = only.AccountID
	}
	if only.Platform != "" {
		out.Only["platform"] = only.Platform
	}
	for _, p := range r.Retried {
		out.Retried = append(out.Retried, RetriedPost{PostID: p.PostID, TrackingID: p.TrackingID, Targets: p.Targets})
		out.Targets += p.Targets
	}
	for _, p := range r.Skipped {
		out.Skipped = append(out.Skipped, SkippedPost{PostID: p.PostID, Reason: p.Reason})
	}
	return c.JSON(http.StatusAccepted, out)
}

func platformNames() string {
	names := make([]string, len(platforms.All))
	for i, p := range platforms.All {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// CampaignCancelled is the answer of DELETE /v1/campaigns/:id.
type CampaignCancelled struct {
	CampaignID string `json:"campaign_id"`
	// Cancelled are the draft and scheduled posts deleted.
	Cancelled []string `json:"cancelled"`
	// Kept are the posts left, with their statuses: publishing, or final.
	Kept []KeptPost `json:"kept"`
	// Deleted says that no post was left and the campaign itself is gone.
	Deleted bool `json:"deleted"`
}

// KeptPost is a post DELETE left in place.
type KeptPost struct {
	PostID string `json:"post_id"`
	Status string `json:"status"`
}

// deleteCampaign serves DELETE /v1/campaigns/:id: it cancels what is still draft or scheduled
// and reports the posts it leaves.
func (h *handlers) deleteCampaign(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	r, err := actors.AskWithin[*campaign.CancelReply](c.Request().Context(), h.campaignOpTimeout(), h.Campaigns.To(id),
		&campaign.Cancel{UserID: server.Principal(c).User.ID})
	if err != nil {
		return h.campaignError(c, err)
	}
	out := &CampaignCancelled{CampaignID: id, Cancelled: r.Cancelled, Kept: make([]KeptPost, 0, len(r.Kept)), Deleted: r.Removed}
	for _, k := range r.Kept {
		out.Kept = append(out.Kept, KeptPost{PostID: k.PostID, Status: k.Status})
	}
	return c.JSON(http.StatusOK, out)
}

func (h *handlers) campaignError(c *echo.Context, err error) error {
	if errors.Is(err, campaign.ErrNotFound) {
		return apierr.NotFound("campaign")
	}
	return h.lifecycleError(c, err)
}
