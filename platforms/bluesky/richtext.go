package bluesky

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Bluesky does not link anything a post's text does not mark up with a facet: a byte range of the
// UTF-8 text plus a feature (link, mention or tag). These patterns follow the detection of the
// official client (@atproto/api RichText.detectFacets), simplified: links need an http(s) scheme.
var (
	linkPattern    = regexp.MustCompile(`(?:^|[\s(])(https?://[^\s]+)`)
	mentionPattern = regexp.MustCompile(`(?:^|[\s(])(@([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)`)
	tagPattern     = regexp.MustCompile(`(?:^|\s)([#＃][^\s#＃]+)`)
	digitsOnly     = regexp.MustCompile(`^[0-9]+$`)
)

// maxTagLength is the longest hashtag (in characters, without '#') Bluesky links.
const maxTagLength = 64

// facetSpan is a detected span of the text.
type facetSpan struct {
	start, end int // byte offsets in the UTF-8 text
	kind       string
	value      string // URI, handle (without '@') or tag (without '#')
}

// detectFacets finds links, mentions and hashtags with their UTF-8 byte ranges.
func detectFacets(text string) []facetSpan {
	var spans []facetSpan
	// Each kind needs a character most texts lack; a text without it skips that pattern.
	if strings.Contains(text, "://") {
		for _, m := range linkPattern.FindAllStringSubmatchIndex(text, -1) {
			s, e := m[2], m[3]
			uri := trimURL(text[s:e])
			spans = append(spans, facetSpan{start: s, end: s + len(uri), kind: "link", value: uri})
		}
	}
	if strings.Contains(text, "@") {
		for _, m := range mentionPattern.FindAllStringSubmatchIndex(text, -1) {
			s, e := m[2], m[3]
			if e < len(text) {
				if r, _ := utf8.DecodeRuneInString(text[e:]); isHandleChar(r) {
					continue // part of something longer (an email address, a path)
				}
			}
			spans = append(spans, facetSpan{start: s, end: e, kind: "mention", value: strings.ToLower(text[s+1 : e])})
		}
	}
	if strings.ContainsAny(text, "#＃") {
		for _, m := range tagPattern.FindAllStringSubmatchIndex(text, -1) {
			s, e := m[2], m[3]
			tag := strings.TrimRight(text[s:e], ".,;:!?'\")]}")
			_, size := utf8.DecodeRuneInString(tag)
			value := tag[size:]
			if value == "" || digitsOnly.MatchString(value) || utf8.RuneCountInString(value) > maxTagLength {
				continue
			}
			spans = append(spans, facetSpan{start: s, end: s + len(tag), kind: "tag", value: value})
		}
	}
	return dropOverlaps(spans)
}

func isHandleChar(r rune) bool {
	return r == '-' || r == '@' || r == '/' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

// trimURL drops sentence punctuation after a URL and a closing parenthesis it did not open.
func trimURL(u string) string {
	u = strings.TrimRight(u, ".,;:!?'\"")
	if strings.HasSuffix(u, ")") && !strings.Contains(u, "(") {
		u = strings.TrimRight(u[:len(u)-1], ".,;:!?'\"")
	}
	return u
}

// dropOverlaps keeps the earliest of overlapping spans (a hashtag inside a URL is not a tag).
func dropOverlaps(spans []facetSpan) []facetSpan {
	out := spans[:0]
	for _, s := range spans {
		keep := true
		for _, o := range out {
			if s.start < o.end && o.start < s.end {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, s)
		}
	}
	return out
}
