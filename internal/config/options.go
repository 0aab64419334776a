package config

import (
	"log/slog"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/gateway"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// GatewayOptions turns a validated configuration into the gateway's options.
func (c *Config) GatewayOptions() *gateway.Options {
	p, _ := balance.ParsePolicy(c.Balance) // validated
	keep := time.Duration(c.KeepAlive)
	if keep == 0 {
		keep = -1 // off
	}
	retries := c.Retries
	if retries == 0 {
		retries = -1 // never
	}
	return &gateway.Options{
		Path:            c.Path,
		Balance:         p,
		KeepAlive:       keep,
		MaxBodyBytes:    c.MaxBodyBytes,
		MaxEventBytes:   c.MaxEventBytes,
		BodyReadTimeout: time.Duration(c.BodyReadTimeout),
		WriteTimeout:    time.Duration(c.WriteTimeout),
		Retries:         retries,
		DialTimeout:     time.Duration(c.DialTimeout),
		SessionIdle:     time.Duration(c.SessionIdle),
		AllowAnyHost:    c.AllowAnyHost,
	}
}

// Specs returns the upstreams as the fleet takes them.
func (c *Config) Specs() []upstream.Spec {
	specs := make([]upstream.Spec, len(c.Upstreams))
	for i, u := range c.Upstreams {
		specs[i] = upstream.Spec{Name: u.Name, URL: u.URL}
	}
	return specs
}

// Level returns the configured log level.
func (c *Config) Level() slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(c.LogLevel)) // validated
	return l
}
