{{/* The pod both workloads run (deploy/base/deployment.yaml and deploy/components/per-node/daemonset.yaml): the
DaemonSet's adds BGPADV_NODE_NAME, its placement is each workload's own. Hardened: non-root, no privilege
escalation, every capability dropped, RuntimeDefault seccomp, read-only root filesystem, the runtime directory on an
emptyDir; 60 s to terminate (bgpadv's drain takes 30 s). */}}
{{- define "bgpadv.podTemplate" -}}
{{- $root := .root -}}
metadata:
  labels:
    {{- include "bgpadv.labels" (dict "root" $root "component" "speaker") | nindent 4 }}
  {{- if $root.Values.rollOnConfigChange }}
  annotations:
    checksum/config: {{ toYaml $root.Values.config | sha256sum }}
  {{- end }}
spec:
  serviceAccountName: {{ include "bgpadv.fullname" $root }}
  {{- with .placement.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with .placement.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .central }}
  affinity:
    podAntiAffinity:  # never two speakers on one node: they would share its host network, ports and fate
      requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchLabels:
              {{- include "bgpadv.selectorLabels" $root | nindent 14 }}
          topologyKey: kubernetes.io/hostname
  {{- with .placement.spreadTopologyKey }}
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: {{ . }}
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "bgpadv.selectorLabels" $root | nindent 10 }}
  {{- end }}
  {{- end }}
  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet
  terminationGracePeriodSeconds: 60
  securityContext:
    runAsNonRoot: true
    seccompProfile:
      type: RuntimeDefault
  containers:
    - name: bgpadv
      image: {{ include "bgpadv.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      args: ["run", "--config", "/etc/bgpadv/bgpadv.yaml", "--runtime-dir", "/run/bgpadv"]
      env:
        - name: BGPADV_RUNTIME_DIR
          value: /run/bgpadv
        - name: BGPADV_NODE_IP  # metrics.listen "${BGPADV_NODE_IP}:9179": metrics on the node's address only
          valueFrom:
            fieldRef:
              fieldPath: status.hostIP
        - name: BGPADV_NODE_IPS  # every address of the node, one per family: localAddress {fromEnv: BGPADV_NODE_IPS}
          valueFrom:
            fieldRef:
              fieldPath: status.hostIPs
        - name: BGPADV_POD_NODE_NAME  # the node this pod runs on: its labels select peers[].nodeSelector
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        - name: BGPADV_POD_NAME  # the instance: its BGPSessionState objects are named after it
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: BGPADV_POD_NAMESPACE  # where its BGPSessionState objects live
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        - name: BGPADV_POD_UID  # their ownerReference: they go away with the pod
          valueFrom:
            fieldRef:
              fieldPath: metadata.uid
        {{- if not .central }}
        - name: BGPADV_NODE_NAME  # per-node mode, for this node
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        {{- end }}
      ports:
        - name: metrics
          containerPort: 9179
          protocol: TCP
      readinessProbe:
        httpGet:
          path: /readyz
          port: metrics
        periodSeconds: 5
      livenessProbe:
        httpGet:
          path: /healthz
          port: metrics
        periodSeconds: 10
        failureThreshold: 6
      resources:
        {{- toYaml $root.Values.resources | nindent 8 }}
      securityContext:
        runAsNonRoot: true
        {{- $caps := include "bgpadv.capabilities" $root }}
        {{- if ne $caps "[]" }}
        # BFD, the egress import, unnumbered peers (docs/bfd.md, docs/egress.md, docs/unnumbered.md): the image's bfdd
        # and controller interpreter carry file capabilities (+p) for these; they take effect only inside the
        # bounding set (add) and without no_new_privs. Every other capability stays dropped.
        allowPrivilegeEscalation: true
        {{- else }}
        allowPrivilegeEscalation: false
        {{- end }}
        readOnlyRootFilesystem: true
        capabilities:
          drop: ["ALL"]
          add: {{ $caps }}
        seccompProfile:
          type: RuntimeDefault
      volumeMounts:
        - name: config
          mountPath: /etc/bgpadv
          readOnly: true
        - name: run
          mountPath: /run/bgpadv
        - name: secrets
          mountPath: /etc/bgpadv-secrets
          readOnly: true
  volumes:
    - name: config
      configMap:
        name: {{ include "bgpadv.fullname" $root }}
    - name: run
      emptyDir:
        sizeLimit: 16Mi
    - name: secrets
      secret:
        secretName: {{ $root.Values.md5Secret }}
        optional: true
        defaultMode: 288  # 0440: owner root, group 0 (the pod's group, whatever its UID) reads it
{{- end -}}
