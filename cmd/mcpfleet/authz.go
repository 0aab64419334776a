package main

import (
	"fmt"

	"github.com/mcpfleet/mcpfleet/internal/authz"
	"github.com/mcpfleet/mcpfleet/internal/config"
)

// authzPolicy compiles the configuration's authorization rules; nil when
// none are set. A rule that does not compile is named by its position and
// name (authz.rules[2].match: rule "x": ...), which config.Locate gives
// the line of.
func authzPolicy(c *config.Config) (*authz.Policy, error) {
	if !c.Authz.On() {
		return nil, nil
	}
	rules := make([]authz.Rule, len(c.Authz.Rules))
	for i, r := range c.Authz.Rules {
		rules[i] = authz.Rule{Name: r.Name, Match: r.Match, Effect: authz.Effect(r.Effect), Scopes: r.Scopes}
	}
	return authz.Compile(rules, authz.Effect(c.Authz.Default))
}

// checkAuthz compiles the rules of the configuration read from path ("" for
// none, or a configuration not the file's alone), so that a bad rule is
// refused before anything is started or swapped, with its line when the
// file is all there is.
func checkAuthz(c *config.Config, path string) (*authz.Policy, error) {
	p, err := authzPolicy(c)
	if err != nil && path != "" {
		err = fmt.Errorf("config %s: %w", path, config.Locate(err, path))
	}
	return p, err
}
