package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
)

func TestParseActorCaps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in                          string
		post, job, account, webhook int
		err                         bool
	}{
		{in: "", post: app.DefaultMaxLiveActors, job: app.DefaultMaxLiveActors, account: app.DefaultMaxLiveActors, webhook: app.DefaultMaxLiveActors},
		{in: "20000", post: 20000, job: 20000, account: 20000, webhook: 20000},
		{in: "job=5000, post=20000", post: 20000, job: 5000, account: app.DefaultMaxLiveActors, webhook: app.DefaultMaxLiveActors},
		{in: "8000,webhook=-1", post: 8000, job: 8000, account: 8000, webhook: 0},
		{in: "-1", post: 0, job: 0, account: 0, webhook: 0},
		{in: "lots", err: true},
		{in: "jobs=5", err: true},
		{in: "job=many", err: true},
	} {
		c, err := app.ParseActorCaps(tc.in)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, []int{tc.post, tc.job, tc.account, tc.webhook}, []int{c.For("post"), c.For("job"), c.For("account"), c.For("webhook")}, tc.in)
	}
}
