import CLibWebSockets
import Foundation
import Synchronization

/// The one thread that runs `lws_service` for a context, and the only way other threads reach it.
///
/// Other threads may only `wake` it (lws_cancel_service) or ask it to stop. The wake path takes no
/// lock, so it may run on a signal-handling path; it never touches a context that is being destroyed.
final class ServiceLoop: Sendable {
    // The context's address while it may be woken; 0 before start and from the moment it is retired.
    private let contextBits = Atomic<UInt>(0)
    // Threads inside `wake` right now; the retiring service thread waits for them to leave.
    private let wakers = Atomic<Int>(0)
    /// Set once a stop was asked for; the owner's exit test reads it on the service thread.
    let stopRequested = Atomic<Bool>(false)
    /// Set when the polite part of stopping ran out of time: leave the loop now.
    let forceExit = Atomic<Bool>(false)
    private let exited = Atomic<Bool>(false)
    private let exitSignal = DispatchSemaphore(value: 0)

    /// Runs the loop on a new thread. The thread keeps `owner` alive, because lws callbacks find it
    /// through an unretained context user pointer. Any thread, once.
    /// - Parameters:
    ///   - shouldExit: asked on the service thread after every `lws_service` return.
    ///   - didDestroy: runs on the service thread after `lws_context_destroy`.
    func start(
        context: OpaquePointer, name: String, owner: AnyObject & Sendable,
        shouldExit: @escaping @Sendable () -> Bool, didDestroy: @escaping @Sendable () -> Void
    ) {
        contextBits.store(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(context))), ordering: .sequentiallyConsistent)
        let contextAddress = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(context)))
        let thread = Thread { [self] in
            withExtendedLifetime(owner) {
                let context = OpaquePointer(bitPattern: contextAddress)!
                while lws_service(context, 0) >= 0 && !shouldExit() {}
                retire()
                lws_context_destroy(context)
                didDestroy()
            }
            exited.store(true, ordering: .sequentiallyConsistent)
            exitSignal.signal()
        }
        thread.name = name
        thread.stackSize = 4 << 20
        thread.start()
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
        if exited.load(ordering: .sequentiallyConsistent) { return true }
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        guard exitSignal.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success else { return false }
        // Let any other waiter through too.
        exitSignal.signal()
        return true
    }

    /// True once the service thread has destroyed the context and ended. Any thread.
    var hasExited: Bool { exited.load(ordering: .sequentiallyConsistent) }

    // Service thread only: stops new wakes and waits out the ones in flight, so no thread calls
    // lws_cancel_service on a context being destroyed (store, then check wakers: they cannot both miss).
    private func retire() {
        contextBits.store(0, ordering: .sequentiallyConsistent)
        while wakers.load(ordering: .sequentiallyConsistent) != 0 {
            sched_yield()
        }
    }
}
