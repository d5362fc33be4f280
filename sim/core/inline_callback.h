#pragma once
// A move-only `void()` callable that stores callables of up to kInlineBytes in place: the event
// engine's callback. std::function (libstdc++) keeps only 16-byte trivially copyable callables in
// place and allocates for the rest, e.g. a lambda capturing [this, a, b] or a std::function<void()>
// moved into a lambda; at millions of events that allocation cost more than the queue itself.
//
// Invariants: constructed from any callable invocable as void() (a std::function included, kept
// whole: calling an empty one throws std::bad_function_call as before); a moved-from callback is
// empty; calling an empty callback throws std::bad_function_call, like std::function.

#include <cstddef>
#include <cstring>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace adaptsim {

class InlineCallback {
 public:
  // Five pointers: [this, index, &a, &b, &c], or a std::function plus a pointer.
  static constexpr std::size_t kInlineBytes = 40;

  InlineCallback() = default;
  InlineCallback(std::nullptr_t) {}

  template <class F, class D = std::decay_t<F>>
  requires(!std::is_same_v<D, InlineCallback> && !std::is_same_v<D, std::nullptr_t> &&
           std::is_invocable_r_v<void, D&>)
      InlineCallback(F&& f) {  // implicit: callers pass lambdas and std::functions
    if constexpr (kStoredInPlace<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
    } else {
      D* p = new D(std::forward<F>(f));
      std::memcpy(storage_, &p, sizeof p);
    }
    ops_ = &kOps<D>;
  }

  InlineCallback(InlineCallback&& other) noexcept { take(other); }
  InlineCallback& operator=(InlineCallback&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  InlineCallback(const InlineCallback&) = delete;
  InlineCallback& operator=(const InlineCallback&) = delete;
  ~InlineCallback() { reset(); }

  void operator()() {
    if (ops_ == nullptr) throw std::bad_function_call();
    ops_->invoke(storage_);
  }
  explicit operator bool() const { return ops_ != nullptr; }

 private:
  // move == nullptr: the stored bytes are moved by copying them, destroy == nullptr: nothing to
  // destroy (trivially copyable callables in place, and the pointer to one on the heap for move).
  struct Ops {
    void (*invoke)(void* storage);
    void (*move)(void* from, void* to) noexcept;  // moves, then destroys the source
    void (*destroy)(void* storage) noexcept;
  };

  template <class D>
  static constexpr bool kStoredInPlace =
      sizeof(D) <= kInlineBytes &&
      alignof(D) <= alignof(void*) && std::is_nothrow_move_constructible_v<D>;

  template <class D>
  static D* target(void* storage) {
    if constexpr (kStoredInPlace<D>) {
      return std::launder(reinterpret_cast<D*>(storage));
    } else {
      D* p;
      std::memcpy(&p, storage, sizeof p);
      return p;
    }
  }

  template <class D>
  static constexpr Ops make_ops() {
    Ops ops{[](void* s) { (*target<D>(s))(); }, nullptr, nullptr};
    if constexpr (!kStoredInPlace<D>) {
      ops.destroy = [](void* s) noexcept { delete target<D>(s); };
    } else if constexpr (!std::is_trivially_copyable_v<D>) {
      ops.move = [](void* from, void* to) noexcept {
        D* source = target<D>(from);
        ::new (to) D(std::move(*source));
        source->~D();
      };
      ops.destroy = [](void* s) noexcept { target<D>(s)->~D(); };
    }
    return ops;
  }
  template <class D>
  static constexpr Ops kOps = make_ops<D>();

  void take(InlineCallback& other) noexcept {
    ops_ = other.ops_;
    if (ops_ == nullptr) return;
    if (ops_->move != nullptr) {
      ops_->move(other.storage_, storage_);
    } else {
      std::memcpy(storage_, other.storage_, kInlineBytes);
    }
    other.ops_ = nullptr;
  }
  void reset() noexcept {
    if (ops_ != nullptr && ops_->destroy != nullptr) ops_->destroy(storage_);
    ops_ = nullptr;
  }

  // Zeroed, so that moving by copying kInlineBytes never reads indeterminate bytes.
  alignas(void*) unsigned char storage_[kInlineBytes] = {};
  const Ops* ops_ = nullptr;
};

}  // namespace adaptsim
