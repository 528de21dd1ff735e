package main

import (
	"strings"

	"sigs.k8s.io/yaml"
)

// toYaml as Helm and ESO write it: no trailing newline; empty on error.
func toYaml(v any) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

// fromYaml parses a YAML map; on error the map holds the message under "Error".
func fromYaml(s string) map[string]any {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}
