{{/* The chart's name: app.kubernetes.io/name, the job the alerts watch. */}}
{{- define "bgpadv.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Object names: the release name when it contains the chart's name ("bgpadv" for `helm install bgpadv`), else
release-chart; at most 63 characters. */}}
{{- define "bgpadv.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The namespace of every namespaced object. */}}
{{- define "bgpadv.namespace" -}}
{{- default .Release.Namespace .Values.namespace.name -}}
{{- end -}}

{{/* What the selectors match: never the version (a Deployment's selector cannot change in place). */}}
{{- define "bgpadv.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bgpadv.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The recommended labels, on every object and pod template; the component is given: speaker or monitoring. */}}
{{- define "bgpadv.labels" -}}
{{ include "bgpadv.selectorLabels" .root }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: bgpadv
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "bgpadv.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* "true" when bfdd must be able to start: bfd.enabled, or some peer of the configuration has bfd.enabled. */}}
{{- define "bgpadv.bfd" -}}
{{- $on := .Values.bfd.enabled -}}
{{- range .Values.config.peers -}}
{{- if kindIs "map" . -}}{{- if kindIs "map" .bfd -}}{{- if .bfd.enabled -}}{{- $on = true -}}{{- end -}}{{- end -}}{{- end -}}
{{- end -}}
{{- if $on -}}true{{- end -}}
{{- end -}}

{{/* "true" when the controller imports routes (egress, docs/egress.md): import.enabled, or the configuration's
importRoutes.enabled. Its netlink writes need NET_ADMIN. */}}
{{- define "bgpadv.import" -}}
{{- $on := .Values.import.enabled -}}
{{- if kindIs "map" .Values.config.importRoutes -}}{{- if .Values.config.importRoutes.enabled -}}{{- $on = true -}}{{- end -}}{{- end -}}
{{- if $on -}}true{{- end -}}
{{- end -}}

{{/* "true" when the controller serves unnumbered peers (docs/unnumbered.md): unnumbered.enabled, or some peer of
the configuration has an interface. Its Router Solicitations and Advertisements need NET_RAW. */}}
{{- define "bgpadv.unnumbered" -}}
{{- $on := .Values.unnumbered.enabled -}}
{{- range .Values.config.peers -}}
{{- if kindIs "map" . -}}{{- if .interface -}}{{- $on = true -}}{{- end -}}{{- end -}}
{{- end -}}
{{- if $on -}}true{{- end -}}
{{- end -}}

{{/* "true" when the controller serves an unnumbered peer with BFD (docs/unnumbered.md): some peer of the
configuration has an interface and bfd.enabled, or unnumbered.enabled and bfd.enabled (for peers added later). The
host route that sends bfdd's packets to the ToR's link-local address by the peer's link needs NET_ADMIN. */}}
{{- define "bgpadv.unnumberedBfd" -}}
{{- $on := and .Values.unnumbered.enabled .Values.bfd.enabled -}}
{{- range .Values.config.peers -}}
{{- if kindIs "map" . -}}{{- if and .interface (kindIs "map" .bfd) -}}{{- if .bfd.enabled -}}{{- $on = true -}}{{- end -}}{{- end -}}{{- end -}}
{{- end -}}
{{- if $on -}}true{{- end -}}
{{- end -}}

{{/* The capabilities the container adds to its bounding set (JSON list): bfdd's three with BFD, NET_ADMIN with the
import, NET_RAW with unnumbered peers (once, BFD's too), NET_ADMIN with BFD on an unnumbered peer (once, the
import's too); [] otherwise. Each takes effect only through the image's file capabilities, so escalation must be
allowed when the list is not empty. */}}
{{- define "bgpadv.capabilities" -}}
{{- $caps := list -}}
{{- if include "bgpadv.bfd" . -}}{{- $caps = concat $caps (list "NET_BIND_SERVICE" "NET_RAW" "SYS_ADMIN") -}}{{- end -}}
{{- if include "bgpadv.import" . -}}{{- $caps = append $caps "NET_ADMIN" -}}{{- end -}}
{{- if include "bgpadv.unnumbered" . -}}{{- $caps = append $caps "NET_RAW" -}}{{- end -}}
{{- if include "bgpadv.unnumberedBfd" . -}}{{- $caps = append $caps "NET_ADMIN" -}}{{- end -}}
{{- toJson (uniq $caps) -}}
{{- end -}}
