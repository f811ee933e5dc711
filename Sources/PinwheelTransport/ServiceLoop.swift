import CLibWebSockets
import Foundation
import Synchronization

/// The one thread that runs `lws_service` for a context, and the only way other threads reach it.
///
/// Other threads may only `wake` it (lws_cancel_service) or ask it to stop. The wake path takes no
/// lock, so it may run on a signal-handling path; it never touches a context that is being destroyed.
///
/// With libev the loop is ours (an lws "foreign loop"): lws_service then runs ev_run until
/// `breakIfExiting` breaks it, and lws installs no SIGINT watcher of its own.
final class ServiceLoop: Sendable {
    private let backend: EventLoopBackend
    // The libev loop's address (0 for poll) and the one-entry array lws reads it from; set by
    // `prepareForeignLoops` before the service thread starts, freed by it after the context.
    private let evLoopBits = Atomic<UInt>(0)
    private let foreignLoopsBits = Atomic<UInt>(0)
    // The context's address while it may be woken; 0 before start and from the moment it is retired.
    private let contextBits = Atomic<UInt>(0)
    // Threads inside `wake` right now; the retiring service thread waits for them to leave.
    private let wakers = Atomic<Int>(0)
    /// Set once a stop was asked for; the owner's exit test reads it on the service thread.
    let stopRequested = Atomic<Bool>(false)
    /// Set when the polite part of stopping ran out of time: leave the loop now.
    let forceExit = Atomic<Bool>(false)
    private let exited = Atomic<Bool>(false)
    // pthread_self() of the service thread, 0 until it runs.
    private let serviceThread = Atomic<UInt>(0)
    private let exitSignal = DispatchSemaphore(value: 0)
    // Wakes the loop every `timerTick`, on either backend, for two reasons. The server's keepalive
    // sweep runs on a wake. And lws 4.1.6's libev backend re-arms its single timer with ev_timer_set
    // on a running watcher, which libev ignores, so a deadline earlier than the armed one (a close
    // handshake's grace, a timeout set from a callback) waits for unrelated traffic; on an idle
    // server, forever: the tick runs lws's due timers within it. Set by `start` before the service
    // thread runs, cancelled by that thread as it retires: never touched by two at once.
    nonisolated(unsafe) private var ticker: DispatchSourceTimer?
    static let timerTick: Duration = .milliseconds(100)
    // With libev, the prepare watcher that runs `beforePolling` (its address; 0 without one), and
    // the closure: set by `start` before the service thread runs, stopped by that thread as it
    // leaves the loop.
    private let beforePollingHookBits = Atomic<UInt>(0)
    nonisolated(unsafe) private var beforePolling: (() -> Void)?

    init(backend: EventLoopBackend) {
        self.backend = backend
    }

    /// Creates our libev loop for `.libev`. The thread creating the context, before `start`.
    /// - Returns: the value for `lws_context_creation_info.foreign_loops` (nil for poll).
    /// - Throws: `TransportError.lwsCallFailed` naming `ev_loop_new` if libev cannot make a loop.
    func prepareForeignLoops() throws -> UnsafeMutablePointer<UnsafeMutableRawPointer?>? {
        guard backend == .libev else { return nil }
        guard let evLoop = shim_ev_loop_new() else {
            throw TransportError.lwsCallFailed(function: "ev_loop_new", detail: "libev could not create a loop")
        }
        let foreignLoops = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 1)
        foreignLoops.initialize(to: evLoop)
        evLoopBits.store(UInt(bitPattern: evLoop), ordering: .sequentiallyConsistent)
        foreignLoopsBits.store(UInt(bitPattern: foreignLoops), ordering: .sequentiallyConsistent)
        return foreignLoops
    }

    /// Lets `lws_service` return when the owner may exit (libev's ev_run would otherwise keep
    /// running; poll returns after every event anyway). Lws service thread only, inside a callback.
    func breakIfExiting(_ exiting: Bool) {
        if exiting, let evLoop = UnsafeMutableRawPointer(bitPattern: evLoopBits.load(ordering: .relaxed)) {
            shim_ev_break(evLoop)
        }
    }

    /// Frees the libev loop, after the context is destroyed or when it could not be created.
    /// The service thread at its end, or the thread calling `start` on failure.
    func freeEventLoop() {
        if let evLoop = UnsafeMutableRawPointer(bitPattern: evLoopBits.exchange(0, ordering: .sequentiallyConsistent)) {
            shim_ev_loop_destroy(evLoop)
        }
        let foreignLoops = foreignLoopsBits.exchange(0, ordering: .sequentiallyConsistent)
        UnsafeMutablePointer<UnsafeMutableRawPointer?>(bitPattern: foreignLoops)?.deallocate()
    }

    /// Runs the loop on a new thread. The thread keeps `owner` alive, because lws callbacks find it
    /// through an unretained context user pointer. Any thread, once.
    /// - Parameters:
    ///   - shouldExit: asked on the service thread after every `lws_service` return.
    ///   - beforePolling: with libev, runs on the service thread each time the loop is about to poll,
    ///     outside any lws callback (see ``wakeForOutput()``).
    ///   - didDestroy: runs on the service thread after `lws_context_destroy`.
    func start(
        context: OpaquePointer, name: String, owner: AnyObject & Sendable,
        shouldExit: @escaping @Sendable () -> Bool, beforePolling: @escaping @Sendable () -> Void,
        didDestroy: @escaping @Sendable () -> Void
    ) {
        installBeforePolling(beforePolling)
        contextBits.store(
            UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(context))), ordering: .sequentiallyConsistent)
        let contextAddress = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(context)))
        let thread = Thread { [self] in
            serviceThread.store(UInt(pthread_self()), ordering: .sequentiallyConsistent)
            withExtendedLifetime(owner) {
                let context = OpaquePointer(bitPattern: contextAddress)!
                while lws_service(context, 0) >= 0 && !shouldExit() {}
                removeBeforePolling()
                retire()
                lws_context_destroy(context)
                freeEventLoop()
                didDestroy()
            }
            exited.store(true, ordering: .sequentiallyConsistent)
            exitSignal.signal()
        }
        thread.name = name
        thread.stackSize = 4 << 20
        thread.start()
        let timer = DispatchSource.makeTimerSource(queue: .global())
        let tick = DispatchTimeInterval.milliseconds(
            Int(Self.timerTick.components.seconds * 1000)
                + Int(Self.timerTick.components.attoseconds / 1_000_000_000_000_000))
        timer.schedule(deadline: .now() + tick, repeating: tick)
        timer.setEventHandler { [weak self] in self?.wake() }
        timer.resume()
        ticker = timer
    }

    /// True when the loop runs `beforePolling` before each poll (libev). Any thread.
    var pollsAfterBeforePolling: Bool { beforePollingHookBits.load(ordering: .relaxed) != 0 }

    /// Makes the service thread notice output just queued. From another thread that is a `wake`. On
    /// the service thread with libev it is nothing: the thread is inside a callback of the loop,
    /// which runs `beforePolling` before it polls again. Any thread.
    func wakeForOutput() {
        if pollsAfterBeforePolling && serviceThread.load(ordering: .relaxed) == UInt(pthread_self()) { return }
        wake()
    }

    /// Makes `lws_service` return soon, raising LWS_CALLBACK_EVENT_WAIT_CANCELLED. Any thread;
    /// lock-free; does nothing before start or after the loop ended.
    func wake() {
        wakers.add(1, ordering: .sequentiallyConsistent)
        let bits = contextBits.load(ordering: .sequentiallyConsistent)
        if bits != 0, let context = OpaquePointer(bitPattern: bits) {
            lws_cancel_service(context)
        }
        wakers.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Blocks until the service thread ended, or `timeout` passed. Any thread but the service thread.
    /// - Returns: true when the thread has ended.
    func waitForExit(timeout: Duration) -> Bool {
        // Waiting on the service thread for itself would hang forever: say so instead.
        precondition(
            serviceThread.load(ordering: .sequentiallyConsistent) != UInt(pthread_self()),
            "stop() called on the lws service thread (from a delegate); use requestStop() there")
        if exited.load(ordering: .sequentiallyConsistent) { return true }
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        guard exitSignal.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success else { return false }
        // Let any other waiter through too.
        exitSignal.signal()
        return true
    }

    /// Blocks until the service thread ended. Once a stop has been requested for `grace`, it sets
    /// `forceExit` so connections that did not finish their close are dropped. Any thread but the
    /// service thread.
    func awaitExit(grace: Duration) {
        // A stop requested before we start waiting counts from now.
        var stopSeen = stopRequested.load(ordering: .sequentiallyConsistent)
        while !waitForExit(timeout: grace) {
            if stopSeen {
                forceExit.store(true, ordering: .sequentiallyConsistent)
                wake()
            }
            stopSeen = stopRequested.load(ordering: .sequentiallyConsistent)
        }
    }

    // Starts the prepare watcher on our libev loop (none for poll). `start`, before the service
    // thread runs.
    private func installBeforePolling(_ body: @escaping () -> Void) {
        guard let evLoop = UnsafeMutableRawPointer(bitPattern: evLoopBits.load(ordering: .sequentiallyConsistent))
        else { return }
        beforePolling = body
        let owner = Unmanaged.passUnretained(self).toOpaque()
        let hook = shim_before_polling_start(
            evLoop,
            { raw in
                Unmanaged<ServiceLoop>.fromOpaque(raw!).takeUnretainedValue().beforePolling?()
            }, owner)
        beforePollingHookBits.store(UInt(bitPattern: hook), ordering: .sequentiallyConsistent)
    }

    // Service thread, once the loop returned for good.
    private func removeBeforePolling() {
        let hook = beforePollingHookBits.exchange(0, ordering: .sequentiallyConsistent)
        guard let evLoop = UnsafeMutableRawPointer(bitPattern: evLoopBits.load(ordering: .sequentiallyConsistent)),
            let hook = UnsafeMutablePointer<shim_before_polling>(bitPattern: hook)
        else { return }
        shim_before_polling_stop(evLoop, hook)
        beforePolling = nil
    }

    // Service thread only: stops new wakes and waits out the ones in flight, so no thread calls
    // lws_cancel_service on a context being destroyed (store, then check wakers: they cannot both miss).
    private func retire() {
        ticker?.cancel()
        contextBits.store(0, ordering: .sequentiallyConsistent)
        while wakers.load(ordering: .sequentiallyConsistent) != 0 {
            sched_yield()
        }
    }
}
