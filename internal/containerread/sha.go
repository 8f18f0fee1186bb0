package containerread

import (
	"crypto/sha256"
	"encoding/hex"
)

// SHA256Hex is the hex sha256 of b, as sha256sum prints it.
func SHA256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
