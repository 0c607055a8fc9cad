package actors

import (
	"reflect"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the actor runtime's Prometheus metrics, labelled by actor kind and message type,
// never by actor id.
type Metrics struct {
	Messages     *prometheus.CounterVec
	Processing   *prometheus.HistogramVec
	MailboxDepth *prometheus.GaugeVec
	Live         *prometheus.GaugeVec
	Activations  *prometheus.CounterVec
	Passivations *prometheus.CounterVec
	Restarts     *prometheus.CounterVec
	// Refused counts the requests answered with ErrBusy (Kind's MailboxLimit).
	Refused *prometheus.CounterVec
	// Capped counts the passivations made to keep a kind under its cap (Kind's MaxLive); they
	// are counted among Passivations too.
	Capped *prometheus.CounterVec
	// MaxLive is each kind's cap (0: none).
	MaxLive *prometheus.GaugeVec
}

// NewMetrics registers the actor metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_actor_messages_total", Help: "Messages processed by actors, by actor kind and message type.",
		}, []string{"actor_kind", "message_type"}),
		Processing: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_actor_message_duration_seconds", Help: "Time an actor spent processing one message.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"actor_kind", "message_type"}),
		MailboxDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_actor_mailbox_depth", Help: "Messages in the mailboxes of live actors of a kind, waiting or being processed, whoever sent them.",
		}, []string{"actor_kind"}),
		Live: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_actors_live", Help: "Live (activated) actors of a kind.",
		}, []string{"actor_kind"}),
		Activations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_actor_activations_total", Help: "Actor activations (an actor loaded from bbolt on its first message).",
		}, []string{"actor_kind"}),
		Passivations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_actor_passivations_total", Help: "Actors stopped after being idle.",
		}, []string{"actor_kind"}),
		Restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_actor_restarts_total", Help: "Actors restarted by supervision after a failure.",
		}, []string{"actor_kind"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_actor_requests_refused_total", Help: "Requests not delivered to an actor of a kind because its mailbox was full (answered at once with ErrBusy).",
		}, []string{"actor_kind"}),
		Capped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_actor_capped_passivations_total", Help: "Idle actors passivated to keep a kind under its cap of live actors (counted among the passivations too).",
		}, []string{"actor_kind"}),
		MaxLive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_actors_live_limit", Help: "The cap of live actors of a kind (--max-live-actors; 0: none).",
		}, []string{"actor_kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.Messages, m.Processing, m.MailboxDepth, m.Live, m.Activations, m.Passivations, m.Restarts, m.Refused, m.Capped, m.MaxLive)
	}
	return m
}

var typeNames sync.Map // reflect.Type → string

// messageType is the label for a message: its Go type without package path or pointer star.
func messageType(msg any) string {
	t := reflect.TypeOf(msg)
	if t == nil {
		return "nil"
	}
	if v, ok := typeNames.Load(t); ok {
		return v.(string)
	}
	name := t.String()
	name = strings.TrimPrefix(name, "*")
	typeNames.Store(t, name)
	return name
}

// kindMetrics are one kind's metric children, resolved once instead of on every message.
type kindMetrics struct {
	m                                   *Metrics
	kind                                string
	depth, live                         prometheus.Gauge
	activations, passivations, restarts prometheus.Counter
	refused, capped                     prometheus.Counter
	perType                             sync.Map // reflect.Type → *messageMetrics
}

type messageMetrics struct {
	name     string
	count    prometheus.Counter
	duration prometheus.Observer
}

func newKindMetrics(m *Metrics, kind string) kindMetrics {
	return kindMetrics{
		m: m, kind: kind,
		depth: m.MailboxDepth.WithLabelValues(kind), live: m.Live.WithLabelValues(kind),
		activations: m.Activations.WithLabelValues(kind), passivations: m.Passivations.WithLabelValues(kind),
		restarts: m.Restarts.WithLabelValues(kind), refused: m.Refused.WithLabelValues(kind),
		capped: m.Capped.WithLabelValues(kind),
	}
}

func (k *kindMetrics) forMessage(msg any) *messageMetrics {
	t := reflect.TypeOf(msg)
	if v, ok := k.perType.Load(t); ok {
		return v.(*messageMetrics)
	}
	name := messageType(msg)
	mm := &messageMetrics{name: name, count: k.m.Messages.WithLabelValues(k.kind, name), duration: k.m.Processing.WithLabelValues(k.kind, name)}
	v, _ := k.perType.LoadOrStore(t, mm)
	return v.(*messageMetrics)
}
