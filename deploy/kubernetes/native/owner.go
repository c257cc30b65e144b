package native

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// OwnerFor returns the owner reference that TaskManager pods get when the
// JobManager runs in the pod podName: the Deployment that owns the pod
// through a ReplicaSet, when there is one, so that the pods outlive a
// restart of the JobManager's pod (the new JobManager adopts them by their
// labels) and go when the Deployment is deleted; otherwise the pod itself.
func OwnerFor(ctx context.Context, client kubernetes.Interface, namespace, podName string) (*metav1.OwnerReference, error) {
	pod, err := client.CoreV1().Pods(namespace).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("native: the JobManager's pod %s/%s: %w", namespace, podName, err)
	}
	own := &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	rsRef := metav1.GetControllerOf(pod)
	if rsRef == nil || rsRef.Kind != "ReplicaSet" {
		return own, nil
	}
	rs, err := client.AppsV1().ReplicaSets(namespace).Get(ctx, rsRef.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("native: the JobManager's ReplicaSet %s/%s: %w", namespace, rsRef.Name, err)
	}
	depRef := metav1.GetControllerOf(rs)
	if depRef == nil || depRef.Kind != "Deployment" {
		return own, nil
	}
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: depRef.Name, UID: depRef.UID}, nil
}
