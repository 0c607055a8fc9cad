package sim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// liArticle checks a post's content.article (an article share: source, title, description and
// thumbnail, an image URN of the author that is AVAILABLE) and returns it as the simulator
// records it (Record.Options["article"]); nil when the content is no article. An article goes
// alone: not with media or multiImage.
func (li *liSim) liArticle(m liMember, raw json.RawMessage) (map[string]any, int, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, 0, ""
	}
	var content struct {
		Article *struct {
			Source      string `json:"source"`
			Title       string `json:"title"`
			Description string `json:"description"`
			Thumbnail   string `json:"thumbnail"`
		} `json:"article"`
		Media      json.RawMessage `json:"media"`
		MultiImage json.RawMessage `json:"multiImage"`
	}
	if err := json.Unmarshal(raw, &content); err != nil {
		return nil, http.StatusBadRequest, "/content :: malformed"
	}
	a := content.Article
	if a == nil {
		return nil, 0, ""
	}
	if len(content.Media) > 0 || len(content.MultiImage) > 0 {
		return nil, http.StatusBadRequest, "/content :: only one of media, multiImage and article"
	}
	if u, err := url.Parse(a.Source); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, http.StatusUnprocessableEntity, "/content/article/source :: must be an absolute http or https URL"
	}
	if strings.TrimSpace(a.Title) == "" {
		return nil, http.StatusUnprocessableEntity, "/content/article/title :: field is required"
	}
	out := map[string]any{"source": a.Source, "title": a.Title}
	if a.Description != "" {
		out["description"] = a.Description
	}
	if a.Thumbnail != "" {
		asset := li.asset("image", a.Thumbnail)
		if !strings.HasPrefix(a.Thumbnail, "urn:li:image:") || asset == nil || !m.may(asset.owner) {
			return nil, http.StatusBadRequest, "/content/article/thumbnail :: " + a.Thumbnail + " does not exist or is not owned by the author"
		}
		if st := li.assetStatus(asset); st != "AVAILABLE" {
			return nil, http.StatusUnprocessableEntity, "/content/article/thumbnail :: " + a.Thumbnail + " is " + st + ", not AVAILABLE"
		}
		b, ok := li.n.Store.Blob("li-asset:" + a.Thumbnail)
		if !ok {
			return nil, http.StatusBadRequest, "/content/article/thumbnail :: " + a.Thumbnail + " has no content"
		}
		out["thumbnail"] = a.Thumbnail
		out["thumbnail_sha256"] = b.SHA256()
	}
	return out, 0, ""
}
