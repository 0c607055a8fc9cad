package persistence

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// decodeBoth decodes b with the hand-written decoder (fast reports whether it took the record)
// and with encoding/json, into new values of v's type.
func decodeBoth[T any](b []byte) (fast bool, got T, want T, wantErr error) {
	fast = decodeFast(b, &got)
	wantErr = json.Unmarshal(b, &want)
	return fast, got, want, wantErr
}

// checkDecoders decodes b as a Post, PostContent or Job (as typed by T) both ways and fails when
// the fast path takes a record encoding/json refuses or decodes it differently. It returns
// whether the fast path took it.
func checkDecoders[T any](t *testing.T, b []byte) bool {
	t.Helper()
	fast, got, want, wantErr := decodeBoth[T](b)
	if !fast {
		var zero T
		if !reflect.DeepEqual(got, zero) {
			t.Fatalf("%T: the fast path refused %s but changed the value: %+v", got, b, got)
		}
		return false
	}
	if wantErr != nil {
		t.Fatalf("%T: the fast path took %s, which encoding/json refuses: %v", got, b, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%T: %s\n fast %+v\n json %+v", got, b, got, want)
	}
	// Decode gives the same whichever path it takes.
	var viaDecode T
	if err := Decode(b, &viaDecode); err != nil || !reflect.DeepEqual(viaDecode, want) {
		t.Fatalf("%T: Decode(%s) = %+v, %v", got, b, viaDecode, err)
	}
	return true
}

// The appenders' output (every awkward string, every optional field, every form of time) is
// decoded by the fast path, to exactly what encoding/json decodes.
func TestDecodersMatchEncodingJSON(t *testing.T) {
	times := sampleTimes(t)
	for i, s := range awkward {
		tm := times[i%len(times)]
		for _, p := range samplePosts(s, tm) {
			b := appendPost(nil, p)
			if !checkDecoders[Post](t, b) {
				t.Errorf("the fast path refused a post as the appender writes it: %s", b)
			}
			if !checkDecoders[PostContent](t, b) {
				t.Errorf("the fast path refused a post's content as the appender writes it: %s", b)
			}
		}
		for _, j := range sampleJobs(s, tm) {
			b := appendJob(nil, j)
			if !checkDecoders[Job](t, b) {
				t.Errorf("the fast path refused a job as the appender writes it: %s", b)
			}
		}
	}
}

// The records a round trip through Encode and Decode gives back equal the originals as
// encoding/json gives them back.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	tm := sampleTimes(t)[0]
	for _, p := range samplePosts("text <b> & \"q\" 🚀", tm) {
		b, err := Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		var got, want Post
		if err := Decode(b, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("post %s:\n got %+v\nwant %+v", b, got, want)
		}
		if got.ID != p.ID || got.Content != p.Content || len(got.Targets) != len(p.Targets) || !got.CreatedAt.Equal(p.CreatedAt) {
			t.Fatalf("post %s decoded as %+v", b, got)
		}
	}
	for _, j := range sampleJobs("text <b> & \"q\" 🚀", tm) {
		b, err := Encode(j)
		if err != nil {
			t.Fatal(err)
		}
		var got, want Job
		if err := Decode(b, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("job %s:\n got %+v\nwant %+v", b, got, want)
		}
		if got.TrackingID != j.TrackingID || got.Seq != j.Seq || len(got.Targets) != len(j.Targets) {
			t.Fatalf("job %s decoded as %+v", b, got)
		}
	}
}

// Records of other layouts (older ones without later fields, other key orders, whitespace,
// escapes the appenders never write) decode as encoding/json decodes them; what the fast path
// does not recognise goes to encoding/json whole, so a field it does not know is never dropped.
func TestDecodeOtherLayouts(t *testing.T) {
	cases := []struct {
		name string
		rec  string
		fast bool // whether the fast path should take it
	}{
		{"older post without later fields", `{"id":"p","user_id":"u","content":"hi","status":"draft","scheduled_at":null,"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z","media_ids":null,"targets":[{"connected_account_id":"a","platform":"x","status":"pending","error":null}]}`, true},
		{"keys in another order, with whitespace", "{ \"targets\" : [ ] ,\n\t\"id\":\"p\" , \"version\" : 3, \"created_at\":\"2026-01-02T03:04:05.5+02:00\" }\n", true},
		{"escapes the appenders never write", `{"id":"p\/q","content":"\u00e9\u0041\n\"x\"","status":"\u0064raft"}`, true},
		{"options with inner whitespace and null", `{"id":"p","targets":[{"connected_account_id":"a","options":  { "a" : [1, 2.5e3, -0, true, null, "s\u00e9"] } },{"options":null}]}`, true},
		{"an empty object", `{}`, true},
		{"an unknown field", `{"id":"p","legacy_flag":true,"content":"hi"}`, false},
		{"an unknown target field", `{"id":"p","targets":[{"connected_account_id":"a","legacy":1}]}`, false},
		{"a key in another case", `{"ID":"p","Content":"hi"}`, false},
		{"an escaped key", `{"\u0069d":"p"}`, false},
		{"a repeated key", `{"id":"p","id":"q"}`, false},
		{"a repeated nested key", `{"targets":[{"first_comment":{"content":"a"},"first_comment":{"status":"failed"}}]}`, false},
		{"a surrogate pair", `{"content":"\ud83d\ude80"}`, false},
		{"a lone surrogate", `{"content":"\ud83d"}`, false},
		{"invalid UTF-8", "{\"content\":\"a\xffb\"}", false},
		{"a fractional version", `{"version":1.0}`, false},
		{"a negative version", `{"version":-1}`, false},
		{"an oversized version", `{"version":18446744073709551616}`, false},
		{"null content", `{"content":null}`, false},
		{"a null target", `{"targets":[null]}`, false},
		{"a time in another form", `{"created_at":"2026-01-02 03:04:05Z"}`, false},
		{"a top-level null", `null`, false},
		{"trailing garbage", `{"id":"p"} x`, false},
		{"a trailing comma", `{"id":"p",}`, false},
		{"a leading zero", `{"version":01}`, false},
		{"a control character", "{\"content\":\"a\tb\"}", false},
		{"truncated", `{"id":"p","targets":[{"connected_account_id":"a"`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkDecoders[Post](t, []byte(c.rec)); got != c.fast {
				t.Errorf("fast path took it: %v, want %v", got, c.fast)
			}
			checkDecoders[PostContent](t, []byte(c.rec))
			// Whatever path it takes, Decode agrees with encoding/json, errors included.
			var got, want Post
			err, wantErr := Decode([]byte(c.rec), &got), json.Unmarshal([]byte(c.rec), &want)
			if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("Decode: %+v, %v; encoding/json: %+v, %v", got, err, want, wantErr)
			}
		})
	}
	// An unknown field of a record of another layout is kept, by encoding/json, in a type that
	// has it: nothing is dropped because the fast path cannot place it.
	var p Post
	if err := Decode([]byte(`{"id":"p","Content":"kept"}`), &p); err != nil || p.Content != "kept" {
		t.Fatalf("a key in another case: %+v, %v", p, err)
	}

	jobs := []struct {
		name string
		rec  string
		fast bool
	}{
		{"older job without later fields", `{"tracking_id":"j","post_id":"p","user_id":"u","status":"processing","targets":[{"target":0,"platform":"x","connected_account_id":"a","phase":"platform_uploading","message":""}],"created_at":"2026-01-02T03:04:05Z","completed_at":null,"seq":2}`, true},
		{"a negative target", `{"targets":[{"target":-1}]}`, true},
		{"an unknown field", `{"tracking_id":"j","attempt":3}`, false},
		{"a fractional target", `{"targets":[{"target":1.5}]}`, false},
		{"an exponent seq", `{"seq":1e3}`, false},
		{"a target beyond int", `{"targets":[{"target":9223372036854775808}]}`, false},
		{"a string post_synced", `{"post_synced":"true"}`, false},
		{"a null post_synced", `{"post_synced":null}`, false},
	}
	for _, c := range jobs {
		t.Run("job "+c.name, func(t *testing.T) {
			if got := checkDecoders[Job](t, []byte(c.rec)); got != c.fast {
				t.Errorf("fast path took it: %v, want %v", got, c.fast)
			}
		})
	}
}

// A value that is not zero is left to encoding/json, which merges into it.
func TestDecodeIntoNonZeroValue(t *testing.T) {
	p := Post{Content: "before", Status: "draft"}
	if decodeFast([]byte(`{"id":"p"}`), &p) {
		t.Fatal("the fast path decoded into a value that is not zero")
	}
	if err := Decode([]byte(`{"id":"p"}`), &p); err != nil || p.ID != "p" || p.Content != "before" {
		t.Fatalf("Decode into a non-zero post: %+v, %v", p, err)
	}
}

// Deep nesting inside options is left to encoding/json, which has its own limit.
func TestDecodeDeepOptions(t *testing.T) {
	deep := strings.Repeat("[", maxSkipDepth+10) + strings.Repeat("]", maxSkipDepth+10)
	rec := []byte(`{"id":"p","targets":[{"options":` + deep + `}]}`)
	if checkDecoders[Post](t, rec) {
		t.Fatal("the fast path walked deeper than its bound")
	}
	var p Post
	if err := Decode(rec, &p); err != nil || !bytes.Equal(p.Targets[0].Options, []byte(deep)) {
		t.Fatalf("deep options: %v", err)
	}
}

// fuzzSeeds are the appenders' records and a few of other layouts.
func fuzzSeeds(f *testing.F, posts bool) {
	times := sampleTimes(f)
	for i, s := range awkward {
		tm := times[i%len(times)]
		if posts {
			for _, p := range samplePosts(s, tm) {
				f.Add(appendPost(nil, p))
			}
		} else {
			for _, j := range sampleJobs(s, tm) {
				f.Add(appendJob(nil, j))
			}
		}
	}
	f.Add([]byte(`{"id":"p","Content":"x","targets":[{"options":{"a":[1,2.5e-3,"\u00e9"]}}],"version":01}`))
	f.Add([]byte(`{"tracking_id":"j","targets":[{"target":-0,"parts":[{"id":"1"}]}],"seq":1e2}`))
}

func FuzzDecodePost(f *testing.F) {
	fuzzSeeds(f, true)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecoders[Post](t, b)
		checkDecoders[PostContent](t, b)
	})
}

func FuzzDecodeJob(f *testing.F) {
	fuzzSeeds(f, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecoders[Job](t, b)
	})
}

// BenchmarkDecode compares the hand-written decoders with encoding/json on a published post of
// three targets and its job, as the job, post and account actors read them.
func BenchmarkDecode(b *testing.B) {
	tm := sampleTimes(b)[4]
	p := &Post{ID: "019ac3a4-6b1e-7cc2-9a43-5f0e2d7c1b10", UserID: "019ac3a4-6b1e-7cc2-9a43-5f0e2d7c1b11", Content: "Our autumn collection is out today, with free shipping on every order this week. #launch",
		Status: PostPublished, CreatedAt: tm, UpdatedAt: tm, MediaIDs: []string{}, Version: 4}
	j := &Job{TrackingID: "019ac3a4-6b1e-7cc2-9a43-5f0e2d7c1b12", PostID: p.ID, UserID: p.UserID, Status: JobCompleted, CreatedAt: tm, CompletedAt: &tm, Seq: 9}
	for i, platform := range []string{"twitter_x", "bluesky", "linkedin"} {
		p.Targets = append(p.Targets, Target{AccountID: "019ac3a4-6b1e-7cc2-9a43-5f0e2d7c1b2" + string(rune('0'+i)), Platform: platform, Status: TargetPublished,
			PublicationID: "1861234567890123456", URL: "https://x.com/i/web/status/1861234567890123456", PublishedAt: &tm})
		j.Targets = append(j.Targets, JobTarget{Target: i, Platform: platform, AccountID: p.Targets[i].AccountID, Phase: PhaseSuccess, Message: "published",
			PublicationID: "1861234567890123456", URL: "https://x.com/i/web/status/1861234567890123456"})
	}
	post, job := appendPost(nil, p), appendJob(nil, j)
	bench := func(name string, raw []byte, fresh func() any, useJSON bool) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v := fresh()
				var err error
				if useJSON {
					err = json.Unmarshal(raw, v)
				} else {
					err = Decode(raw, v)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	bench("post/fast", post, func() any { return new(Post) }, false)
	bench("post/json", post, func() any { return new(Post) }, true)
	bench("content/fast", post, func() any { return new(PostContent) }, false)
	bench("content/json", post, func() any { return new(PostContent) }, true)
	bench("job/fast", job, func() any { return new(Job) }, false)
	bench("job/json", job, func() any { return new(Job) }, true)
}
