package persistence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// awkward are strings whose JSON encoding has every special case of encoding/json.
var awkward = []string{
	"", "plain", `quote " and backslash \`, "<script>&amp;</script>", "tab\tnew\nline\rcr\bbs\fff",
	"\x00\x01\x1f control", "invalid \xff\xfe utf-8", "line\u2028para\u2029sep", "émoji 🚀 日本語",
	"truncated \xe2\x82", "\x7f del",
}

// optionsOf is options as Herald stores them: encoded JSON.
func optionsOf(s string) json.RawMessage {
	b, err := json.Marshal(map[string]string{"title": s})
	if err != nil {
		panic(err)
	}
	return b
}

// sampleTimes are times of every form the records hold: UTC, a named zone, a fixed offset, the
// zero time, and now (monotonic reading and all).
func sampleTimes(t testing.TB) []time.Time {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	return []time.Time{
		time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC),
		time.Date(2026, 3, 29, 2, 30, 0, 123456789, paris),
		time.Date(2026, 1, 2, 3, 4, 5, 100, time.FixedZone("", -(9*3600+30*60))),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(),
	}
}

// samplePosts are posts with s in every string field, and every optional field set or not.
func samplePosts(s string, tm time.Time) []*Post {
	msg := s
	return []*Post{
		{ID: s, UserID: s, Content: s, Status: s, CreatedAt: tm, UpdatedAt: tm},
		{ID: "p", UserID: "u", WorkspaceID: s, Content: s, CreatedAt: tm, UpdatedAt: tm},
		{ID: "p", Content: s, ScheduledAt: &tm, ScheduledZone: s, CreatedAt: tm, UpdatedAt: tm, MediaIDs: []string{}, Targets: []Target{},
			Version: 7, TrackingID: &msg, FinishedJob: s, QuotaCounted: true, CampaignID: s},
		{ID: "p", Content: s, CreatedAt: tm, UpdatedAt: tm, MediaIDs: []string{s, "m2"}, Version: 1 << 63,
			Targets: []Target{{AccountID: "a", Platform: "linkedin", Status: s}, {AccountID: s, Platform: s, Status: "failed", Error: &msg, PublicationID: s},
				{AccountID: "b", Platform: "twitter_x", Status: "published", PublicationID: "1", URL: s, PublishedAt: &tm}}},
		{ID: "p", Content: s, CreatedAt: tm, UpdatedAt: tm, Targets: []Target{
			{AccountID: "a", Platform: "youtube", Content: &msg, MediaIDs: &[]string{}, Options: optionsOf(s)},
			{AccountID: "b", Platform: "tiktok", MediaIDs: &[]string{s}, Options: json.RawMessage(` { "privacy_level" : "SELF_ONLY" , "t":"<&>\u2028" } `)}}},
		{ID: "p", Content: s, CreatedAt: tm, UpdatedAt: tm, Targets: []Target{
			{AccountID: "a", Platform: "twitter_x", Thread: []ThreadPart{{Content: s}, {Content: "b", MediaIDs: []string{s}, PublicationID: s, URL: s, Ref: s}},
				FirstComment: &FirstComment{Content: s, Status: CommentFailed, Error: s}},
			{AccountID: "b", Platform: "linkedin", Thread: []ThreadPart{}, FirstComment: &FirstComment{Content: "c", Status: CommentPublished, PublicationID: s, URL: s}}}},
		{ID: "p", Content: s, Status: PostPendingApproval, CreatedAt: tm, UpdatedAt: tm, RejectionReason: &msg,
			Approval:     &Approval{Action: ApprovalSchedule, ScheduledAt: &tm, RequestedAt: tm, RequestedBy: s},
			ApprovalLink: &ApprovalLink{Hash: []byte(s), ExpiresAt: tm, UsedAt: &tm},
			ApprovalLog:  []ApprovalStep{{Kind: ApprovalRequested, At: tm, By: s}, {Kind: ApprovalRejected, At: tm, By: "u", Reason: s}}},
	}
}

// sampleJobs are jobs with s in every string field, and every optional field set or not.
func sampleJobs(s string, tm time.Time) []*Job {
	return []*Job{
		{TrackingID: s, PostID: s, UserID: s, Status: s, CreatedAt: tm},
		{TrackingID: "j", UserID: "u", WorkspaceID: s, CreatedAt: tm},
		{TrackingID: "j", Targets: []JobTarget{}, CreatedAt: tm, CompletedAt: &tm, Seq: 42, PostSynced: true, CampaignID: s},
		{TrackingID: "j", CreatedAt: tm, Targets: []JobTarget{{Target: 0, Platform: s, AccountID: s, Phase: s, Message: s},
			{Target: -3, Platform: "x", Phase: PhaseSuccess, Message: "ok", PublicationID: s, URL: "https://x.com/a?b=1&c=<2>"}}},
		{TrackingID: "j", CreatedAt: tm, Targets: []JobTarget{{Target: 0, Platform: "bluesky", Phase: PhaseFailed, Message: s, PublicationID: s,
			Parts: []Step{{ID: s, URL: s, Ref: s}, {ID: "2"}}, Comment: &FirstComment{Content: s, Status: CommentPending}}, {Target: 1, Parts: []Step{}}}},
	}
}

func TestAppendersMatchEncodingJSON(t *testing.T) {
	times := sampleTimes(t)
	for i, s := range awkward {
		tm := times[i%len(times)]
		for _, p := range samplePosts(s, tm) {
			want, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendPost(nil, p); !bytes.Equal(got, want) {
				t.Errorf("post with %q:\n got %s\nwant %s", s, got, want)
			}
		}
		for _, j := range sampleJobs(s, tm) {
			want, err := json.Marshal(j)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendJob(nil, j); !bytes.Equal(got, want) {
				t.Errorf("job with %q:\n got %s\nwant %s", s, got, want)
			}
		}
		for _, v := range []any{
			[]JobEvent(nil), []JobEvent{},
			[]JobEvent{{Target: 0, Phase: s, Message: s, At: tm}, {Target: -2, Phase: PhaseSuccess, Message: "published", At: tm}},
			&Attempt{JobID: s, Target: 1, AccountID: s, StartedAt: tm},
			&Attempt{JobID: "j", Target: -1, AccountID: "a", StartedAt: tm, Step: 2, Done: []Step{{ID: s}, {ID: "2", URL: s, Ref: s}}, Pending: true},
			&Attempt{JobID: "j", StartedAt: tm, Done: []Step{}},
			&Event{ID: s, Type: s, UserID: s, CreatedAt: tm, Data: optionsOf(s)},
			&Event{ID: "e", Type: "post.published", UserID: "u", WorkspaceID: s, CreatedAt: tm},
			&Event{ID: "e", CreatedAt: tm, Data: json.RawMessage(" [1, {\"a\" : \"<\u2028>\"}, \"\xff\", 2.5e-3] ")},
			&Event{ID: "e", CreatedAt: tm, Data: json.RawMessage("\"" + s + "\"")},
		} {
			want, wantErr := json.Marshal(v)
			got, err := Encode(v)
			if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
				t.Errorf("%T with %q:\n got %s, %v\nwant %s, %v", v, s, got, err, want, wantErr)
			}
		}
	}
}

// What encoding/json refuses in an event's data (nothing, or not one JSON value) Encode refuses
// too: the appender leaves it to encoding/json.
func TestEncodeRefusesInvalidEventData(t *testing.T) {
	for _, data := range []string{"", "{", `{"a":1} x`, `[1,]`, "\"a\x01\"", "01"} {
		e := &Event{ID: "e", CreatedAt: time.Now(), Data: json.RawMessage(data)}
		if _, err := Encode(e); err == nil {
			t.Errorf("data %q was encoded", data)
		}
	}
	for _, data := range []string{"null", " 1 ", `{"a":[true,false,null,-0.5E+2]}`} {
		e := &Event{ID: "e", CreatedAt: time.Now(), Data: json.RawMessage(data)}
		want, _ := json.Marshal(e)
		if got, err := Encode(e); err != nil || !bytes.Equal(got, want) {
			t.Errorf("data %q: %s, %v; want %s", data, got, err, want)
		}
	}
}

// A time encoding/json refuses is refused by Encode too (it falls back to encoding/json).
func TestEncodeRefusesUnencodableTimes(t *testing.T) {
	p := &Post{ID: "p", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := Encode(p); err == nil {
		t.Fatal("a year beyond 9999 was encoded")
	}
	j := &Job{TrackingID: "j", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 25*3600))}
	if _, err := Encode(j); err == nil {
		t.Fatal("a zone offset beyond 24 h was encoded")
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
	})
}

func FuzzEncodeEventData(f *testing.F) {
	for _, s := range []string{"null", `{"post_id":"p","targets":[{"url":"https://x.com/a?b=1&c=<2>"}]}`, " [1, 2.5e-3] ", "\"\xff\u2028\"", "{", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e := &Event{ID: "e", Type: "post.published", UserID: "u", CreatedAt: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC), Data: data}
		want, wantErr := json.Marshal(e)
		got, err := Encode(e)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("data %q:\n got %s, %v\nwant %s, %v", data, got, err, want, wantErr)
		}
	})
}

// BenchmarkEncodeRecords compares the appenders of the records every job writes besides its
// post and job (its events, an attempt per call, an outbox event) with encoding/json.
func BenchmarkEncodeRecords(b *testing.B) {
	tm := time.Now()
	records := []struct {
		name string
		v    any
	}{
		{"job-events", []JobEvent{{Target: 1, Phase: PhaseUploading, Message: "publishing to X", At: tm}, {Target: 1, Phase: PhaseSuccess, Message: "published", At: tm}}},
		{"attempt", &Attempt{JobID: "019ac3a4-6b1e-7cc2-9a43-5f0e2d7c1b12", Target: 2, AccountID: "019ac3a4-6b1e-7cc2-9a43-5f0e2d7c1b20", StartedAt: tm}},
		{"event", &Event{ID: "019ac3a4-6b1e-7cc2-9a43-5f0e2d7c1b30", Type: "post.published", UserID: "019ac3a4-6b1e-7cc2-9a43-5f0e2d7c1b11", CreatedAt: tm,
			Data: json.RawMessage(`{"post_id":"019ac3a4-6b1e-7cc2-9a43-5f0e2d7c1b10","status":"published","targets":[{"platform":"twitter_x","status":"published","url":"https://x.com/i/web/status/1861234567890123456"}]}`)}},
	}
	for _, r := range records {
		b.Run(r.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(r.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(r.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(r.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendString appends a post's text and a target's message, as records carry them.
func BenchmarkAppendString(b *testing.B) {
	for _, s := range []string{
		"Herald ships 2.0 today: scheduling, campaigns and threads for every network we publish to. Read more at https://example.com/blog/herald-2",
		"published to bluesky",
	} {
		b.Run(fmt.Sprint(len(s)), func(b *testing.B) {
			buf := make([]byte, 0, 512)
			for b.Loop() {
				buf = appendString(buf[:0], s)
			}
		})
	}
}
