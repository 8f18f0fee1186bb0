package shadow

import (
	"crypto/sha1" //nolint:gosec // Reloader's hash, compared, never trusted
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
)

// ConfigMapHash is Reloader's hash of a ConfigMap's data: SHA-1 of the
// sorted key=value pairs joined by ';' (binary values in base64).
func ConfigMapHash(data map[string]string, binary map[string][]byte) string {
	var values []string
	for k, v := range data {
		values = append(values, k+"="+v)
	}
	for k, v := range binary {
		values = append(values, k+"="+base64.StdEncoding.EncodeToString(v))
	}
	return sha(values)
}

// SecretHash is Reloader's hash of a Secret's data.
func SecretHash(data map[string][]byte) string {
	var values []string
	for k, v := range data {
		values = append(values, k+"="+string(v))
	}
	return sha(values)
}

func sha(values []string) string {
	sort.Strings(values)
	h := sha1.Sum([]byte(strings.Join(values, ";"))) //nolint:gosec
	return fmt.Sprintf("%x", h)
}
