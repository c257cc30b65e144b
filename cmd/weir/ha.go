package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster"
	"github.com/weirproject/weir/internal/ha"
)

// openHA opens the high-availability services that cfg configures, or
// returns nil when high-availability.type is none.
func openHA(ctx context.Context, cfg *config.Configuration) (*ha.Services, error) {
	hc, enabled, err := ha.FromConfiguration(cfg)
	if err != nil || !enabled {
		return nil, err
	}
	return ha.Open(ctx, hc)
}

// newRESTClient returns a client of the JobManager's REST API: the one at
// addr when the user named it, else, with high availability configured,
// whichever JobManager leads at each request (so that an attached client
// follows a change of leader), else rest.address:rest.port.
func newRESTClient(cmd *cobra.Command, cfg *config.Configuration, addr string) (*cluster.RESTClient, error) {
	explicit := addr != ""
	if !explicit {
		addr = cluster.RESTAddressFrom(cfg)
	}
	client, err := cluster.NewRESTClient(addr, cluster.SecurityFrom(cfg))
	if err != nil || explicit {
		return client, err
	}
	s, err := openHA(cmd.Context(), cfg)
	if err != nil {
		return nil, err
	}
	if s != nil {
		client.FollowLeader(func(ctx context.Context) (string, error) {
			l, err := s.LeaderAddress(ctx)
			if err != nil {
				return "", err
			}
			li, err := cluster.ParseLeaderInfo(l.Address)
			return li.REST, err
		}, func() { s.Close() })
	}
	return client, nil
}
