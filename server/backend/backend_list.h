/*
 * The lists both backends keep of their objects, written once: streams in a ring around
 * the backend's head, and graph nodes, graph conditions and a module's functions in
 * lists linked by `next` that go with their owner.  The element types are each
 * backend's own, hence macros.
 */
#ifndef DS_BACKEND_LIST_H
#define DS_BACKEND_LIST_H

/* Put x first in the ring around head. */
#define DS_RING_PUSH(head, x)                                                                  \
    do {                                                                                       \
        (x)->next = (head)->next;                                                              \
        (x)->prev = (head);                                                                    \
        (head)->next->prev = (x);                                                              \
        (head)->next = (x);                                                                    \
    } while (0)

/* Take x out of its ring. */
#define DS_RING_UNLINK(x)                                                                      \
    do {                                                                                       \
        (x)->prev->next = (x)->next;                                                           \
        (x)->next->prev = (x)->prev;                                                           \
    } while (0)

/* Free each element of the list at lvalue head, of type `type *`, with fn; head ends
 * NULL. */
#define DS_LIST_FREE(type, head, fn)                                                           \
    do {                                                                                       \
        while ((head) != NULL) {                                                               \
            type *next_ = (head)->next;                                                        \
                                                                                               \
            fn(head);                                                                          \
            (head) = next_;                                                                    \
        }                                                                                      \
    } while (0)

#endif
