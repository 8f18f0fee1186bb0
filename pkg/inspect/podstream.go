package inspect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The API server's protobuf envelope: 4 magic bytes, then a runtime.Unknown
// message whose field 2 holds the encoded object. A PodList holds its
// ListMeta in field 1 and each Pod in field 2.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

const (
	unknownRawField         = 2
	unknownContentEncoding  = 3
	listMetaField           = 1
	listItemsField          = 2
	wireVarint              = 0
	wireFixed64             = 1
	wireBytes               = 2
	wireFixed32             = 5
	maxPodBytes             = 64 << 20
	maxContentEncodingBytes = 64 // "gzip" at most; a corrupt length must not allocate
	protobufAcceptHeader    = "application/vnd.kubernetes.protobuf, application/json"
	podStreamReadBufferSize = 64 << 10
)

// streamPods lists pods through rc (a core/v1 REST client) page by page and
// hands each pod to each as soon as it is decoded: the response is read
// from the connection one pod at a time, so neither the encoded page nor
// the decoded PodList of 10,000 pods is ever held whole. each must not keep
// the pod (it is reused); it keeps what it needs (see TrimPod). A page that
// expires part way is handled as listPaged says.
func streamPods(ctx context.Context, rc rest.Interface, ns string, lo metav1.ListOptions, each func(*corev1.Pod) error) error {
	var h handedOn
	return listPaged(ctx, lo, &h, func(ctx context.Context, lo metav1.ListOptions) (string, error) {
		body, err := rc.Get().Namespace(ns).Resource("pods").VersionedParams(&lo, scheme.ParameterCodec).
			SetHeader("Accept", protobufAcceptHeader).Stream(ctx)
		if err != nil {
			return "", err
		}
		defer body.Close()
		meta, err := decodePodList(body, func(p *corev1.Pod) error {
			if !h.pass(p.UID) {
				return nil
			}
			return each(p)
		})
		return meta.Continue, err
	})
}

// decodePodList reads one LIST response (protobuf, or JSON when the server
// answered JSON), calls each per pod in order and returns the list's
// metadata.
func decodePodList(r io.Reader, each func(*corev1.Pod) error) (metav1.ListMeta, error) {
	br := bufio.NewReaderSize(r, podStreamReadBufferSize)
	magic, err := br.Peek(len(protobufMagic))
	if err != nil && !errors.Is(err, io.EOF) {
		return metav1.ListMeta{}, fmt.Errorf("reading the pod list: %w", err)
	}
	if !bytes.Equal(magic, protobufMagic) {
		return decodePodListJSON(br, each)
	}
	br.Discard(len(protobufMagic))
	var meta metav1.ListMeta
	found := false
	// the runtime.Unknown envelope
	for {
		field, wire, err := readTag(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return meta, err
		}
		switch {
		case field == unknownRawField && wire == wireBytes:
			n, err := readLength(br)
			if err != nil {
				return meta, err
			}
			lr := &io.LimitedReader{R: br, N: int64(n)}
			if meta, err = decodePodListItems(lr, n, each); err != nil {
				return meta, err
			}
			if lr.N > 0 {
				// the connection ended inside the list
				return meta, truncated(io.ErrUnexpectedEOF)
			}
			found = true
		case field == unknownContentEncoding && wire == wireBytes:
			n, err := readLength(br)
			if err != nil {
				return meta, err
			}
			if n > maxContentEncodingBytes {
				return meta, fmt.Errorf("reading the pod list: a content encoding of %d bytes", n)
			}
			enc := make([]byte, n)
			if _, err := io.ReadFull(br, enc); err != nil {
				return meta, truncated(err)
			}
			if len(enc) > 0 {
				return meta, fmt.Errorf("reading the pod list: unsupported content encoding %q", enc)
			}
		default:
			if err := skipField(br, wire); err != nil {
				return meta, err
			}
		}
	}
	if !found {
		return meta, errors.New("reading the pod list: the response holds no list")
	}
	return meta, nil
}

// decodePodListItems reads the n bytes of a PodList message.
func decodePodListItems(r io.Reader, n uint64, each func(*corev1.Pod) error) (metav1.ListMeta, error) {
	br := bufio.NewReaderSize(r, 0) // r is already buffered: a small reader for the varints
	var meta metav1.ListMeta
	var buf []byte
	var pod corev1.Pod
	for {
		field, wire, err := readTag(br)
		if errors.Is(err, io.EOF) {
			return meta, nil
		}
		if err != nil {
			return meta, err
		}
		if wire != wireBytes || (field != listMetaField && field != listItemsField) {
			if err := skipField(br, wire); err != nil {
				return meta, err
			}
			continue
		}
		size, err := readLength(br)
		if err != nil {
			return meta, err
		}
		if size > maxPodBytes || size > n {
			return meta, fmt.Errorf("reading the pod list: an item of %d bytes in a list of %d", size, n)
		}
		if uint64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(br, buf); err != nil {
			return meta, truncated(err)
		}
		if field == listMetaField {
			if err := meta.Unmarshal(buf); err != nil {
				return meta, fmt.Errorf("reading the pod list's metadata: %w", err)
			}
			continue
		}
		// Unmarshal copies every string out of buf, which is reused.
		pod = corev1.Pod{}
		if err := pod.Unmarshal(buf); err != nil {
			return meta, fmt.Errorf("reading a pod of the list: %w", err)
		}
		if err := each(&pod); err != nil {
			return meta, err
		}
	}
}

// decodePodListJSON decodes a JSON PodList whole (a server that would not
// answer protobuf).
func decodePodListJSON(r io.Reader, each func(*corev1.Pod) error) (metav1.ListMeta, error) {
	var list corev1.PodList
	if err := json.NewDecoder(r).Decode(&list); err != nil {
		return metav1.ListMeta{}, fmt.Errorf("reading the pod list: %w", err)
	}
	for i := range list.Items {
		if err := each(&list.Items[i]); err != nil {
			return list.ListMeta, err
		}
	}
	return list.ListMeta, nil
}

func readTag(r io.ByteReader) (field uint64, wire byte, err error) {
	t, err := binary.ReadUvarint(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, 0, io.EOF
		}
		return 0, 0, truncated(err)
	}
	return t >> 3, byte(t & 7), nil
}

func readLength(r io.ByteReader) (uint64, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, truncated(err)
	}
	return n, nil
}

// skipField reads past a field the decoder does not need.
func skipField(r *bufio.Reader, wire byte) error {
	var n uint64
	switch wire {
	case wireVarint:
		_, err := binary.ReadUvarint(r)
		return truncated(err)
	case wireFixed64:
		n = 8
	case wireFixed32:
		n = 4
	case wireBytes:
		var err error
		if n, err = readLength(r); err != nil {
			return err
		}
	default:
		return fmt.Errorf("reading the pod list: unexpected protobuf wire type %d", wire)
	}
	if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
		return truncated(err)
	}
	return nil
}

func truncated(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading the pod list: %w", err)
}
