package platforms_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/heraldhq/herald/platforms"
)

func TestFirstLink(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"no link here": "",
		"read https://example.com/a?b=1. Then more":         "https://example.com/a?b=1",
		"(see http://example.com/x) and https://b.example/": "http://example.com/x",
		"ftp://example.com/x is not one":                    "",
		"mailto:a@example.com https://é.example/ü!":         "https://é.example/ü",
		"glued:https://example.com/ is not a link either":   "",
	} {
		assert.Equal(t, want, platforms.FirstLink(text), text)
	}
}

func TestCardLink(t *testing.T) {
	t.Parallel()
	off, on := false, true
	text := "new post: https://example.com/post"
	for _, tc := range []struct {
		name string
		o    platforms.Options
		want string
	}{
		{"no options: the text's link", nil, "https://example.com/post"},
		{"typed nil options", (*platforms.BlueskyOptions)(nil), "https://example.com/post"},
		{"options without link", &platforms.ThreadsOptions{ReplyControl: "everyone"}, "https://example.com/post"},
		{"options.link first", &platforms.LinkedInOptions{Link: "https://other.example/"}, "https://other.example/"},
		{"link_card true", &platforms.FacebookOptions{LinkCard: &on}, "https://example.com/post"},
		{"link_card false", &platforms.BlueskyOptions{Link: "https://other.example/", LinkCard: &off}, ""},
		{"a network without cards", &platforms.XOptions{}, ""},
	} {
		assert.Equal(t, tc.want, platforms.CardLink(tc.o, text), tc.name)
	}
	assert.Empty(t, platforms.CardLink(nil, "no link"))
}

func TestCheckCardOptions(t *testing.T) {
	t.Parallel()
	off := false
	photo := platforms.Media{ContentType: "image/jpeg"}
	for _, tc := range []struct {
		name           string
		o              platforms.Options
		t              platforms.Target
		errs, warnings []string
	}{
		{"fine", &platforms.BlueskyOptions{Link: "https://example.com/a"}, platforms.Target{}, nil, nil},
		{"not a URL", &platforms.ThreadsOptions{Link: "example.com/a"}, platforms.Target{}, []string{"options.link: must be an absolute http or https URL"}, nil},
		{"another scheme", &platforms.LinkedInOptions{Link: "javascript:alert(1)"}, platforms.Target{}, []string{"options.link: must be an absolute http or https URL"}, nil},
		{"a control character", &platforms.BlueskyOptions{Link: "https://example.com/\x00"}, platforms.Target{}, []string{"options.link: must be an absolute http or https URL"}, nil},
		{"too long path", &platforms.BlueskyOptions{Link: "https://example.com/" + strings.Repeat("a", 2048)}, platforms.Target{}, []string{"options.link: is 2068 characters; at most 2048"}, nil},
		{"with media", &platforms.BlueskyOptions{Link: "https://example.com/a"}, platforms.Target{Media: []platforms.Media{photo}}, []string{"options.link: a link card goes with a post without media"}, nil},
		{"defaults with media are not judged", &platforms.BlueskyOptions{Link: "https://example.com/a"}, platforms.Target{Media: []platforms.Media{photo}, Defaults: true}, nil, nil},
		{"turned off", &platforms.LinkedInOptions{Link: "https://example.com/a", LinkCard: &off}, platforms.Target{}, nil, []string{"options.link: is not used: link_card is false, so no card is attached"}},
		{"facebook turned off", &platforms.FacebookOptions{Link: "https://example.com/a", LinkCard: &off}, platforms.Target{}, nil, []string{"options.link: is not used: link_card is false, so no card is attached"}},
	} {
		errs, warnings := platforms.CheckOptions(tc.o, tc.t)
		assert.Equal(t, tc.errs, messages(errs), tc.name)
		assert.Equal(t, tc.warnings, messages(warnings), tc.name)
	}
}

func messages(fes []platforms.FieldError) []string {
	var out []string
	for _, e := range fes {
		out = append(out, e.Error())
	}
	return out
}
