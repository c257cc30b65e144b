package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/weirproject/weir/config"
)

// How much of a request body each REST endpoint reads. Uploads may be as
// large as rest.server.max-content-length; a job submission, whose body
// carries the plan, 16 MiB; every other endpoint 1 MiB (its JSON holds
// a path or a few arguments). The option caps them all. A body over its
// endpoint's limit gets 413 and is neither decoded nor stored.
const (
	maxSubmissionBody = 16 << 20
	maxRequestBody    = 1 << 20
)

// restBodyLimits are the endpoints (mux patterns) whose limit is not
// maxRequestBody; 0 is rest.server.max-content-length.
var restBodyLimits = map[string]int64{
	"/artifacts":   0,
	"/jars/upload": 0,
	"/jobs":        maxSubmissionBody,
}

// bodyLimit is the limit of one endpoint's request bodies.
type bodyLimit struct {
	n      int64
	option bool // n is rest.server.max-content-length
}

// bodyLimit returns the limit of the endpoint pattern.
func (jm *JobManager) bodyLimit(pattern string) bodyLimit {
	max := jm.opts.MaxContentLength
	if max <= 0 {
		max = config.RESTServerMaxContentLength.Default
	}
	n, ok := restBodyLimits[pattern]
	if !ok {
		n = maxRequestBody
	}
	if n == 0 || n >= max {
		return bodyLimit{n: max, option: true}
	}
	return bodyLimit{n: n}
}

type bodyLimitKey struct{}

// limitBody answers 413 to a request that announces a body over the
// limit, before reading any of it, and otherwise makes reading past the
// limit fail with *http.MaxBytesError (which bodyTooLarge answers) and
// the server close the connection rather than read the rest.
func limitBody(w http.ResponseWriter, r *http.Request, l bodyLimit) (*http.Request, bool) {
	if r.ContentLength > l.n {
		writeTooLarge(w, r, l)
		return r, false
	}
	r = r.WithContext(context.WithValue(r.Context(), bodyLimitKey{}, l))
	r.Body = http.MaxBytesReader(w, r.Body, l.n)
	return r, true
}

// bodyTooLarge answers 413 and returns true when err comes from reading
// past the request body's limit.
func bodyTooLarge(w http.ResponseWriter, r *http.Request, err error) bool {
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) {
		return false
	}
	l, ok := r.Context().Value(bodyLimitKey{}).(bodyLimit)
	if !ok {
		l = bodyLimit{n: mbe.Limit}
	}
	writeTooLarge(w, r, l)
	return true
}

func writeTooLarge(w http.ResponseWriter, r *http.Request, l bodyLimit) {
	msg := fmt.Sprintf("request body of %s %s is larger than %s, ", r.Method, r.URL.Path, byteSize(l.n))
	if l.option {
		msg += "the limit that rest.server.max-content-length sets"
	} else {
		msg += "the limit of this endpoint"
	}
	// What the client still sends is not read.
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusRequestEntityTooLarge, msg)
}

// byteSize writes n in the largest binary unit that divides it.
func byteSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
