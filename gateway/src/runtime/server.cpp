// SPDX-License-Identifier: Apache-2.0
// Assembles the gateway: the listener (I/O threads, acceptors, signals, drain), the admin
// listener, and the shared context. The request path is http_connection -> idempotency_filter
// -> proxy -> upstream_pool.
#include "admin/admin.hpp"
#include "runtime/listener.hpp"
#include "transport/listen_socket.hpp"

#include <boost/asio/post.hpp>
#include <idemgate/common/io_backend.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/server.hpp>

namespace idemgate::gateway {

namespace asio = boost::asio;

struct server::impl {
    detail::gateway_context ctx;
    asio::io_context control{1};
    detail::listener listener{ctx, control};
    detail::admin admin;

    // The boot configuration, until bind() makes it the first generation.
    config::config boot_cfg;

    impl(config::config c, std::shared_ptr<store::backend> b, std::function<void(std::string&)> extra)
        : ctx(c, std::move(b)), admin(ctx, control, std::move(extra)), boot_cfg(std::move(c))
    {
        ctx.backend->set_refusal_policy({boot_cfg.store.refusal.errors, boot_cfg.store.refusal.window});
        admin.on_reload([this](std::vector<std::string>& problems) {
            return listener.reload("POST /admin/v1/reload", problems);
        });
        if (const auto& t = boot_cfg.tracing; t.enabled()) {
            detail::span_exporter::options o;
            o.endpoint = t.otlp_endpoint;
            o.headers = t.headers;
            o.resource = detail::otlp_resource(t, IDEMGATE_VERSION);
            o.service_version = IDEMGATE_VERSION;
            o.queue_spans = t.queue_spans;
            o.tls = detail::make_otlp_tls(t); // --check and start-up checked its files
            o.tls_name = t.tls.server_name;
            o.tls_verify = t.tls.verify;
            std::string instance;
            for (const auto& a : o.resource)
                if (a.key == "service.instance.id")
                    instance = std::get<std::string>(a.value);
            log::info("tracing: exporting spans", {{"otlp_endpoint", t.otlp_endpoint},
                                                   {"service.name", t.service_name},
                                                   {"service.instance.id", instance}});
            ctx.tracer = std::make_unique<detail::span_exporter>(
                o, detail::span_export_counters{ctx.stats.trace_spans_exported,
                                                ctx.stats.trace_spans_dropped_queue,
                                                ctx.stats.trace_spans_dropped_export});
        }
        const auto& o = boot_cfg.access_log_options;
        const access_log_writer::options writing{o.queue_lines, o.batch_bytes, o.flush_interval};
        if (o.path.empty())
            ctx.access_log = std::make_unique<access_log_writer>(writing, ctx.stats.access_log_dropped);
        else // opened here: a path that cannot be opened stops the start, naming it
            ctx.access_log = std::make_unique<access_log_writer>(writing, ctx.stats.access_log_dropped,
                                                                 std::make_unique<access_log_file>(o.path));
        ctx.access_log->capture_log_lines(ctx.stats.log_dropped);
    }
};

namespace {

std::string endpoint_string(const tcp::endpoint& ep)
{
    return ep.address().to_string() + ":" + std::to_string(ep.port());
}

} // namespace

server::server(config::config cfg, std::shared_ptr<store::backend> backend,
               std::function<void(std::string&)> metrics_extra)
    : impl_(std::make_unique<impl>(std::move(cfg), std::move(backend), std::move(metrics_extra)))
{
}

server::~server() = default;

void server::set_config_path(std::string path)
{
    impl_->ctx.config_path = std::move(path);
}

void server::bind()
{
    impl_->listener.bind(impl_->boot_cfg);
    impl_->admin.bind(detail::resolve_one(impl_->control, impl_->ctx.boot.admin_listen, "admin_listen"));
    impl_->boot_cfg = {}; // from here on, the live generation is the configuration
}

tcp::endpoint server::listen_endpoint() const
{
    return impl_->listener.endpoint();
}

tcp::endpoint server::admin_endpoint() const
{
    return impl_->admin.endpoint();
}

int server::run()
{
    auto& i = *impl_;
    i.admin.start();
    i.listener.run(
        [&i] {
            log::lifecycle("listening", {{"listen", endpoint_string(i.listener.endpoint())},
                                         {"admin_listen", endpoint_string(i.admin.endpoint())},
                                         {"threads", static_cast<std::int64_t>(i.listener.threads())},
                                         {"tls", i.ctx.boot.listen_tls},
                                         {"store", i.ctx.backend->kind()},
                                         {"io", io_backend_name()},
                                         {"version", IDEMGATE_VERSION}});
        },
        [&i] { i.admin.stop(); }, [&i] { return i.admin.accepting(); });
    // The I/O threads have stopped: every line of the drain reaches stdout before "stopped".
    if (i.ctx.access_log)
        i.ctx.access_log->stop();
    // The drain's last spans are sent (bounded) before the process exits.
    if (i.ctx.tracer)
        i.ctx.tracer->stop();
    log::lifecycle("stopped", {{"in_flight", i.ctx.stats.requests_in_flight.load()}});
    return 0;
}

void server::request_stop()
{
    asio::post(impl_->control, [i = impl_.get()] { i->listener.begin_drain("request_stop"); });
}

} // namespace idemgate::gateway
