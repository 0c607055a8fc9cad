package platforms

import (
	"regexp"
	"strings"
)

// linkPattern finds links in a post's text as the official Bluesky client does
// (@atproto/api RichText.detectFacets), simplified: a link needs an http(s) scheme and starts the
// text or follows white space or an opening parenthesis. It is Herald's one link finder: Bluesky's
// link facets and every network's link card use it.
var linkPattern = regexp.MustCompile(`(?:^|[\s(])(https?://[^\s]+)`)

// LinkSpans finds the http(s) links of text: each link's UTF-8 byte range, with sentence
// punctuation after it and a closing parenthesis it did not open left out.
func LinkSpans(text string) [][2]int {
	// A text without "://" has no link; most texts are read without the pattern.
	if !strings.Contains(text, "://") {
		return nil
	}
	var spans [][2]int
	for _, m := range linkPattern.FindAllStringSubmatchIndex(text, -1) {
		s, e := m[2], m[3]
		spans = append(spans, [2]int{s, s + len(trimURL(text[s:e]))})
	}
	return spans
}

// FirstLink is the first http(s) link of text ("" when it has none).
func FirstLink(text string) string {
	spans := LinkSpans(text)
	if len(spans) == 0 {
		return ""
	}
	return text[spans[0][0]:spans[0][1]]
}

// trimURL drops sentence punctuation after a URL and a closing parenthesis it did not open.
func trimURL(u string) string {
	u = strings.TrimRight(u, ".,;:!?'\"")
	if strings.HasSuffix(u, ")") && !strings.Contains(u, "(") {
		u = strings.TrimRight(u[:len(u)-1], ".,;:!?'\"")
	}
	return u
}
