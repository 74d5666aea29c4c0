//! Waits for one of the admin client's futures on the calling thread (librdkafka's own
//! background thread completes them; no async runtime is needed).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

pub(super) fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn waits_for_a_future_completed_by_another_thread() {
        let (tx, rx) = std::sync::mpsc::channel::<u32>();
        let fut = async move {
            // A future that is pending until the other thread sends.
            std::future::poll_fn(|cx| match rx.try_recv() {
                Ok(v) => std::task::Poll::Ready(v),
                Err(_) => {
                    let w = cx.waker().clone();
                    std::thread::spawn(move || {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        w.wake();
                    });
                    std::task::Poll::Pending
                }
            })
            .await
        };
        let t = std::thread::spawn(move || tx.send(7).unwrap());
        assert_eq!(super::block_on(fut), 7);
        t.join().unwrap();
    }
}
