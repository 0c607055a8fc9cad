package sim

import (
	"net/http"

	"github.com/heraldhq/herald/platforms"
)

// The Instagram API with Facebook Login (networks.md §5): the Instagram professional account
// linked to a simulated Page (members.go) is published to on the Facebook Graph host, with the
// Page's token:
//
//	POST /{ig-user-id}/media                    container (as on graph.instagram.com)
//	GET  /{ig-user-id}/media                    the account's posts
//	POST /{ig-user-id}/media_publish            creation_id → {"id"}
//	GET  /{ig-user-id}/content_publishing_limit quota_usage, config
//	GET  /{container-id | ig-media-id}          status_code, status; caption, timestamp, permalink
//	POST /{ig-media-id}/comments                the account's comment on its media
//	GET  /{ig-media-id}/comments                the media's comments
//
// They are the Instagram simulator's own handlers (instagram.go, graph_comment.go), called with
// the Instagram account as the caller: containers, the publishing quota and the record live in
// the Instagram network, so that a post is recorded on platform instagram under the Instagram
// user id, as one published through Instagram Login is, and both logins share the account's
// quota. The call itself goes through Facebook: its request log and faults (post_then_error
// after a publish is the Instagram network's, where the post is recorded), its token check (the
// expire_tokens fault of Facebook expires the Page tokens), and the Page's call budget. A user
// token, a Page without a linked account, or another Page's token gets error 100 ("does not
// exist, cannot be loaded due to missing permissions"), as the Graph API answers.

// igEdges are the Instagram user's edges the Facebook host serves, under the same patterns.
var igEdges = []string{"POST /{id}/media", "GET /{id}/media", "POST /{id}/media_publish", "GET /{id}/content_publishing_limit"}

// igObjects are the routes Facebook and Instagram objects share: an Instagram container or
// media goes to Instagram's handler, anything else to Facebook's own.
var igObjects = []string{"GET /{id}", "POST /{id}/comments", "GET /{id}/comments"}

// serveInstagram adds the Instagram routes to the Facebook host; Facebook's own routes are
// registered first.
func (f *fbSim) serveInstagram() {
	for _, pattern := range igEdges {
		f.g.api(pattern, f.instagramEdge(pattern))
	}
	for _, pattern := range igObjects {
		f.g.handlers[pattern] = f.instagramObject(pattern, f.g.handlers[pattern])
	}
}

// instagram is the Instagram network's Graph API (nil when Instagram is not simulated).
func (f *fbSim) instagram() *graphAPI {
	if n := f.n.Sim.networks[platforms.Instagram]; n != nil {
		return n.graph
	}
	return nil
}

// pageInstagram is the Instagram professional account linked to the Page whose token calls, as
// the Instagram network's caller.
func (f *fbSim) pageInstagram(who graphCaller) (graphCaller, bool) {
	if who.UserToken {
		return graphCaller{}, false
	}
	for _, m := range members[platforms.Facebook] {
		for _, pg := range m.Pages {
			if pg.ID == who.User && pg.Instagram != nil {
				return graphCaller{User: pg.Instagram.ID, Handle: pg.Instagram.Name, Token: who.Token}, true
			}
		}
	}
	return graphCaller{}, false
}

// instagramEdge serves an Instagram user's edge for the Page linked to that user.
func (f *fbSim) instagramEdge(pattern string) graphHandler {
	return func(w http.ResponseWriter, r *http.Request, who graphCaller) {
		id := r.PathValue("id")
		ig, ok := f.pageInstagram(who)
		g := f.instagram()
		if !ok || g == nil || (id != ig.User && id != "me") {
			graphError(w, http.StatusBadRequest, 100, 33, "Unsupported request. Object with ID '"+id+"' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", false)
			return
		}
		g.handlers[pattern](w, r, ig)
	}
}

// instagramObject serves an Instagram container or media (and its comments) with Instagram's
// handler when a Page linked to an Instagram account calls, and anything else with Facebook's.
func (f *fbSim) instagramObject(pattern string, facebook graphHandler) graphHandler {
	return func(w http.ResponseWriter, r *http.Request, who graphCaller) {
		if ig, ok := f.pageInstagram(who); ok {
			if g := f.instagram(); g != nil && g.holds(r.PathValue("id")) {
				g.handlers[pattern](w, r, ig)
				return
			}
		}
		facebook(w, r, who)
	}
}

// holds reports whether the network has a container or a post with this id.
func (g *graphAPI) holds(id string) bool {
	if _, ok := g.container(id); ok {
		return true
	}
	_, ok := g.n.Post(id)
	return ok
}
