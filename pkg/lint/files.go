package lint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// manifestExtensions are the files kubectl apply -f DIR reads.
var manifestExtensions = []string{".json", ".yaml", ".yml"}

// Files expands -f arguments as kubectl apply does: "-" is standard input,
// a file is read whatever its name, a directory gives its .json, .yaml and
// .yml files (with recursive, those of every subdirectory too), in lexical
// order. URLs are refused with what to do instead.
func Files(args []string, recursive bool) ([]string, error) {
	var out []string
	for _, a := range args {
		if a == "-" {
			out = append(out, a)
			continue
		}
		if strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://") {
			return nil, fmt.Errorf("%s: reading manifests from a URL is not supported; download it, or pipe it: curl -sSL URL | kubectl cmsync lint -f -", a)
		}
		st, err := os.Stat(a)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the path %q does not exist", a)
		}
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != a && !recursive {
					return filepath.SkipDir
				}
				return nil
			}
			for _, ext := range manifestExtensions {
				if strings.HasSuffix(p, ext) {
					found = append(found, p)
					break
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

// ReadFiles reads every file (stdin for "-", once) and splits it into
// documents. Parse errors of all files are returned together.
func ReadFiles(files []string, stdin io.Reader) ([]Document, error) {
	var docs []Document
	var errs []error
	stdinRead := false
	for _, f := range files {
		var data []byte
		var err error
		name := f
		if f == "-" {
			if stdinRead {
				continue
			}
			stdinRead, name = true, StdinName
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", name, err)
		}
		d, err := Read(name, data)
		docs = append(docs, d...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return docs, errors.Join(errs...)
}
