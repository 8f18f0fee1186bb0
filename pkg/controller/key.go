package controller

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

// KeyField is the field of the key Secret that holds the HMAC key of the
// records (reconcile.Record): every replica, and every later controller,
// must use the same key, or it sees every record as different.
const KeyField = "key"

// minKeyLen is the shortest key accepted (bytes).
const minKeyLen = 16

// DigestKey reads the key from Secret name in namespace, creating it with
// 32 random bytes when it does not exist and create is set (only the
// leader calls it, so two replicas never race to create it; a lost race
// reads the winner's). Not created: nil.
func DigestKey(ctx context.Context, c kubernetes.Interface, namespace, name string, create bool) ([]byte, error) {
	s, err := c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && !create {
		return nil, nil
	}
	if apierrors.IsNotFound(err) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
				Labels: map[string]string{"app.kubernetes.io/name": "kubectl-cmsync", "app.kubernetes.io/component": "controller"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{KeyField: key},
		}
		s, err = c.CoreV1().Secrets(namespace).Create(ctx, s, metav1.CreateOptions{FieldManager: version.FieldManager})
		if apierrors.IsAlreadyExists(err) {
			s, err = c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the key of the records, Secret %s/%s: %w (the controller needs get and create on secrets in its namespace)", namespace, name, err)
	}
	key := s.Data[KeyField]
	if len(key) < minKeyLen {
		return nil, fmt.Errorf("Secret %s/%s: field %q holds %d bytes, want at least %d; delete the Secret and the controller creates a new key (every recorded consumer is then checked, and restarted only if stale)",
			namespace, name, KeyField, len(key), minKeyLen)
	}
	return key, nil
}
