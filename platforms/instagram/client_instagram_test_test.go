package instagram_test

import "net/http"

// testHTTP is this package's own client: httptest.Server.Close closes the idle connections of
// http.DefaultTransport, which would break requests of tests running in parallel.
var testHTTP = &http.Client{Transport: &http.Transport{}}
