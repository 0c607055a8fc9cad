package api

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Reading POST /v1/campaigns: a JSON body, or a CSV with its options in the query, into a
// campaignRequest. What is wrong with one post becomes that post's errors, checked with the rest
// (checkCampaign); what is wrong with the whole is the request's error.

var campaignModes = []string{persistence.CampaignNow, persistence.CampaignSchedule, persistence.CampaignDraft}

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
	if row.specs, err = o.targets("targets"); err != nil {
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
var csvColumns = []string{"content", "platforms", "media", "scheduledAt", "timezone", "targets"}

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
	// The targets cell holds the JSON array a JSON post's targets take, read by the same reader.
	if v, ok := cell("targets"); ok && strings.TrimSpace(v) != "" {
		if !json.Valid([]byte(v)) {
			row.errs = append(row.errs, "targets: Malformed JSON; the cell holds the JSON array a JSON post's targets take")
		} else {
			var err error
			if row.specs, err = (object{"targets": json.RawMessage(v)}).targets("targets"); err != nil {
				row.fail(err)
			}
		}
	}
	return row
}
