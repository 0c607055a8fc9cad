package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/internal/pdf/pdftest"
	"github.com/heraldhq/herald/platforms"
)

// photos uploads n distinct JPEGs and returns their media ids and hashes, in order.
func photos(h *apptest.Herald, n, size int) (ids, shas []string) {
	for i := range n {
		data := apptest.TestFile("\xFF\xD8\xFF\xE0\x00\x10JFIF\x00", size+i)
		ids = append(ids, h.UploadMedia("photo.jpg", "image/jpeg", data))
		shas = append(shas, apptest.SHA256(data))
	}
	return ids, shas
}

// A post's media is published as each network's carousel or gallery, in the order given, and the
// simulator records what each network's API received.
func TestCarouselsReachTheNetworks(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	ids, shas := photos(h, 5, 20<<10)
	ig, fb, th, li := h.Account(platforms.Instagram).ID, h.Account(platforms.Facebook).ID, h.Account(platforms.Threads).ID, h.Account(platforms.LinkedIn).ID
	pin, x, bsky, tt := h.Account(platforms.Pinterest).ID, h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID, h.Account(platforms.TikTok).ID
	r := h.Do("POST", "/v1/posts/publish", map[string]any{
		"content": "Five frames from the launch", "media": ids,
		"platforms": []string{ig, fb, th, li, pin, x, bsky, tt},
		"targets": []map[string]any{
			{"account_id": x, "media": ids[:4]},
			{"account_id": bsky, "media": []string{ids[3], ids[2], ids[1], ids[0]}},
			{"account_id": tt, "media": ids[:3], "options": map[string]any{"privacy_level": "SELF_ONLY", "photo_cover_index": 2}},
		},
	})
	require.Equal(t, 202, r.Status, string(r.Body))
	job := h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, "completed", job["status"], "%v", job)

	for _, c := range []struct {
		p    platforms.Platform
		want []string
	}{
		{platforms.Instagram, shas},
		{platforms.Facebook, shas},
		{platforms.Threads, shas},
		{platforms.LinkedIn, shas},
		{platforms.Pinterest, shas},
		{platforms.X, shas[:4]},
		{platforms.Bluesky, []string{shas[3], shas[2], shas[1], shas[0]}},
		{platforms.TikTok, shas[:3]},
	} {
		pubs := h.App.Sim.Publications(c.p)
		require.Len(t, pubs, 1, c.p)
		assert.Equal(t, c.want, pubs[0].MediaSHA256, "%s publishes the media in the order given", c.p)
	}
	ttPub := h.App.Sim.Publications(platforms.TikTok)[0]
	assert.Equal(t, "PHOTO", ttPub.Options["media_type"])
	assert.EqualValues(t, 2, ttPub.Options["photo_cover_index"])
}

// One PDF to LinkedIn is a document post, its title the option's or the file's name.
func TestLinkedInDocument(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	li := h.Account(platforms.LinkedIn).ID
	data := pdftest.Build(40, true)
	doc := h.UploadMedia("deck.pdf", platforms.PDF, data)
	m := h.Do("GET", "/v1/media/"+doc, nil).JSON(t)
	assert.Equal(t, platforms.PDF, m["content_type"])

	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "Our year in forty slides", "media": []string{doc}, "platforms": []string{li},
		"targets": []map[string]any{{"account_id": li, "options": map[string]any{"document_title": "2026 in review"}}}})
	require.Equal(t, 202, r.Status, string(r.Body))
	require.Equal(t, "completed", h.WaitJob(r.JSON(t)["tracking_id"].(string))["status"])
	r = h.Do("POST", "/v1/posts/publish", map[string]any{"content": "Again, untitled", "media": []string{doc}, "platforms": []string{li}})
	require.Equal(t, 202, r.Status, string(r.Body))
	require.Equal(t, "completed", h.WaitJob(r.JSON(t)["tracking_id"].(string))["status"])

	pubs := h.App.Sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs, 2)
	assert.Equal(t, []string{apptest.SHA256(data)}, pubs[0].MediaSHA256)
	assert.Equal(t, "2026 in review", pubs[0].Options["document_title"])
	name := m["original_filename"].(string)
	assert.Equal(t, strings.TrimSuffix(name, ".pdf"), pubs[1].Options["document_title"], "the file's name without its extension")

	caps := h.Do("GET", "/v1/accounts/"+li+"/capabilities", nil).JSON(t)
	media := caps["limits"].(map[string]any)["media"].(map[string]any)
	assert.Equal(t, true, media["documents"])
	assert.EqualValues(t, 300, media["max_document_pages"])
	assert.EqualValues(t, 2, media["min_items"])
	assert.EqualValues(t, 20, media["max_images"])
	assert.Contains(t, media["types"], platforms.PDF)
	caps = h.Do("GET", "/v1/accounts/"+h.Account(platforms.Instagram).ID+"/capabilities", nil).JSON(t)
	media = caps["limits"].(map[string]any)["media"].(map[string]any)
	assert.Equal(t, false, media["documents"])
	assert.Equal(t, true, media["mixed"])
}

// Every carousel or document a network refuses is a 400 validation_error naming the target and
// its field, found before anything is written; POST /v1/posts/validate lists the same.
func TestCarouselsBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	ids, _ := photos(h, 36, 2<<10)
	video := h.UploadMedia("clip.mp4", "video/mp4", apptest.MP4File)
	doc := h.UploadMedia("deck.pdf", platforms.PDF, pdftest.Build(3, false))
	ig, li, x, pin, tt, fb := h.Account(platforms.Instagram).ID, h.Account(platforms.LinkedIn).ID, h.Account(platforms.X).ID,
		h.Account(platforms.Pinterest).ID, h.Account(platforms.TikTok).ID, h.Account(platforms.Facebook).ID
	before := h.CountPosts()
	for _, tc := range []struct {
		name    string
		account string
		media   []string
		options map[string]any
		want    string
	}{
		{"an Instagram carousel of 11", ig, ids[:11], nil, "media: 11 media files; Instagram takes one, or 2 to 10 in one post"},
		{"an X post of 5 photos", x, ids[:5], nil, "media: 5 media files; X takes one, or 2 to 4 in one post"},
		{"a Pinterest carousel of 6", pin, ids[:6], nil, "media: 6 media files; Pinterest takes one, or 2 to 5 in one post"},
		{"a TikTok photo post of one", tt, ids[:1], map[string]any{"privacy_level": "SELF_ONLY"}, "media: 1 photo(s); a TikTok photo post takes 2 to 35"},
		{"photos and a video on LinkedIn", li, []string{ids[0], video}, nil, "media: a video goes alone on LinkedIn; the post has 2 media files with 1 video(s)"},
		{"photos and a video on Facebook", fb, []string{ids[0], video}, nil, "media: a video goes alone on Facebook; the post has 2 media files with 1 video(s)"},
		{"a PDF to X", x, []string{doc}, nil, "media: a PDF document (application/pdf) goes to LinkedIn only; X takes no documents"},
		{"a PDF to Instagram", ig, []string{doc}, nil, "media: a PDF document (application/pdf) goes to LinkedIn only; Instagram takes no documents"},
		{"a PDF with a photo on LinkedIn", li, []string{doc, ids[0]}, nil, "media: a document goes alone; the post has 2 media files with a PDF"},
		{"a cover past the photos", tt, ids[:3], map[string]any{"privacy_level": "SELF_ONLY", "photo_cover_index": 3},
			"options.photo_cover_index: is 3; the post has 3 photos, numbered from 0 to 2"},
		{"a document title without a document", li, ids[:2], map[string]any{"document_title": "Deck"},
			"options.document_title: applies to a document post (one PDF) only"},
	} {
		body := map[string]any{"content": "hello", "platforms": []string{tc.account}, "media": tc.media}
		if tc.options != nil {
			body["targets"] = []map[string]any{{"account_id": tc.account, "options": tc.options}}
		}
		r := h.Do("POST", "/v1/posts/publish", body)
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Body)
		assert.Equal(t, "validation_error", r.ErrorCode(t), tc.name)
		assert.Contains(t, errorsOf(t, r)[tc.account], tc.want, tc.name)
		v := h.Do("POST", "/v1/posts/validate", body)
		require.Equal(t, 200, v.Status, "%s: %s", tc.name, v.Body)
		assert.Equal(t, false, v.JSON(t)["valid"], tc.name)
	}
	// A TikTok photo post takes 35 photos; a post takes no more media than that.
	body := map[string]any{"content": "hello", "platforms": []string{tt}, "media": ids[:35],
		"targets": []map[string]any{{"account_id": tt, "options": map[string]any{"privacy_level": "SELF_ONLY", "photo_cover_index": 34}}}}
	v := h.Do("POST", "/v1/posts/validate", body)
	require.Equal(t, 200, v.Status, string(v.Body))
	assert.Equal(t, true, v.JSON(t)["valid"], string(v.Body))
	body["media"] = ids
	r := h.Do("POST", "/v1/posts/publish", body)
	require.Equal(t, 400, r.Status, string(r.Body))
	assert.Equal(t, "media: at most 35 media per post", r.ErrorMessage(t))

	assert.Equal(t, before, h.CountPosts(), "nothing was written")
	for _, p := range platforms.All {
		assert.Empty(t, h.App.Sim.Publications(p), "nothing reached %s", p)
	}
}

// A PDF is taken through the upload's presign, PUT and confirm, on local storage and on S3; one
// that is not a PDF, or has more than 300 pages, is refused at confirm and never becomes a media.
func TestDocumentUpload(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var o apptest.Options
			if backend == "s3" {
				o.Media = apptest.S3Media(t)
			}
			testDocumentUpload(t, apptest.Start(t, o))
		})
	}
}

func testDocumentUpload(t *testing.T, h *apptest.Herald) {
	id := h.UploadMedia("deck.pdf", platforms.PDF, pdftest.Build(300, true))
	assert.Equal(t, platforms.PDF, h.Do("GET", "/v1/media/"+id, nil).JSON(t)["content_type"])

	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"a JPEG named deck.pdf", apptest.JPEGFile, "the file's bytes are image/jpeg, not application/pdf"},
		{"301 pages", pdftest.Build(301, false), "the PDF has 301 pages; LinkedIn takes documents of at most 300"},
	} {
		p := h.Presign(h.Key, "deck.pdf", platforms.PDF, len(c.data))
		require.Equal(t, 200, h.RawPut(p.UploadURL, platforms.PDF, c.data, int64(len(c.data)), nil).Status, c.name)
		r := h.Confirm(h.Key, p, platforms.PDF, len(c.data))
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Body)
		assert.Equal(t, "validation_error", r.ErrorCode(t), c.name)
		assert.Contains(t, r.ErrorMessage(t), c.want, c.name)
		assert.False(t, h.MediaRecord(p.Key).Confirmed(), c.name)
	}

	// Over 100 MB is refused at presign.
	r := h.Do("POST", "/v1/media/presign", map[string]any{"filename": "big.pdf", "content_type": platforms.PDF, "size_bytes": platforms.MaxDocumentBytes + 1})
	require.Equal(t, 400, r.Status, string(r.Body))
	assert.EqualValues(t, platforms.MaxDocumentBytes, r.JSON(t)["error"].(map[string]any)["details"].(map[string]any)["limit_bytes"])
}

// TikTok's photo posts take JPEG and WebP: PNGs are published as the JPEGs Herald derives, in the
// order given, with the cover the option chose.
func TestTikTokPhotoPostConvertsPNGs(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	tt := h.Account(platforms.TikTok).ID
	first := h.UploadMedia("red.png", "image/png", encodePNG(t, halves(40, 20, red, blue)))
	jpegData := encodeJPEG(t, halves(40, 20, blue, red))
	second := h.UploadMedia("blue.jpg", "image/jpeg", jpegData)
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "Two colours", "media": []string{first, second}, "platforms": []string{tt},
		"targets": []map[string]any{{"account_id": tt, "options": map[string]any{"privacy_level": "SELF_ONLY", "photo_cover_index": 1}}}})
	require.Equal(t, 202, r.Status, string(r.Body))
	job := h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, "completed", job["status"], "%v", job)
	pubs := h.App.Sim.Publications(platforms.TikTok)
	require.Len(t, pubs, 1)
	assert.Equal(t, []string{"image/jpeg", "image/jpeg"}, pubs[0].MediaTypes, "the PNG went out as a JPEG")
	require.Len(t, pubs[0].MediaSHA256, 2)
	assert.Equal(t, apptest.SHA256(jpegData), pubs[0].MediaSHA256[1], "the JPEG went as it is, second")
	assert.EqualValues(t, 1, pubs[0].Options["photo_cover_index"])

	v := h.Do("POST", "/v1/posts/validate", map[string]any{"content": "Two colours", "media": []string{first, second}, "platforms": []string{tt},
		"targets": []map[string]any{{"account_id": tt, "options": map[string]any{"privacy_level": "SELF_ONLY"}}}}).JSON(t)
	media := v["targets"].([]any)[0].(map[string]any)["preview"].(map[string]any)["media"].([]any)
	assert.Equal(t, "image/jpeg", media[0].(map[string]any)["converted_to"], "validate says the PNG is converted")
	assert.Nil(t, media[1].(map[string]any)["converted_to"])
	length := v["targets"].([]any)[0].(map[string]any)["preview"].(map[string]any)["length"].(map[string]any)
	assert.EqualValues(t, 4000, length["max"], "a photo post's text is its description")
}
