package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// RESTClient calls a JobManager's REST API, as the weir command line does.
type RESTClient struct {
	base  string
	token string
	http  *http.Client
}

// NewRESTClient returns a client of the REST API at address (host:port, or
// a URL). With TLS enabled in sec it speaks HTTPS and verifies the server
// against sec's CA.
func NewRESTClient(address string, sec Security) (*RESTClient, error) {
	c := &RESTClient{token: sec.Token, http: &http.Client{}}
	scheme := "http"
	if sec.TLS.Enabled {
		scheme = "https"
		cfg, err := sec.TLS.clientConfig()
		if err != nil {
			return nil, err
		}
		c.http.Transport = &http.Transport{TLSClientConfig: cfg}
	}
	if strings.Contains(address, "://") {
		c.base = strings.TrimSuffix(address, "/")
	} else {
		c.base = scheme + "://" + address
	}
	return c, nil
}

// Overview fetches GET /overview.
func (c *RESTClient) Overview(ctx context.Context) (Overview, error) {
	var o Overview
	return o, c.get(ctx, "/overview", &o)
}

// Jobs fetches GET /jobs.
func (c *RESTClient) Jobs(ctx context.Context) ([]JobIDStatus, error) {
	var j JobsJSON
	return j.Jobs, c.get(ctx, "/jobs", &j)
}

// TaskManagers fetches GET /taskmanagers.
func (c *RESTClient) TaskManagers(ctx context.Context) ([]TaskManagerJSON, error) {
	var t TaskManagersJSON
	return t.TaskManagers, c.get(ctx, "/taskmanagers", &t)
}

// Close releases idle connections.
func (c *RESTClient) Close() { c.http.CloseIdleConnections() }

func (c *RESTClient) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("jobmanager REST API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("jobmanager REST API at %s: %w", c.base, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorJSON
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && len(e.Errors) > 0 {
			msg = strings.Join(e.Errors, "; ")
		}
		return fmt.Errorf("jobmanager REST API at %s: GET %s: %s: %s", c.base, path, resp.Status, msg)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("jobmanager REST API at %s: GET %s: %w", c.base, path, err)
	}
	return nil
}
