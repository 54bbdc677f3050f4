// The playground page (playground.html), served at / of the HTTP/JSON API:
// one self-contained page, compiled in from the file by a genrule.
#ifndef PTOSERVE_SERVER_HTTP_PLAYGROUND_PAGE_H_
#define PTOSERVE_SERVER_HTTP_PLAYGROUND_PAGE_H_

namespace ptoserve {

extern const char kPlaygroundPage[];

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTP_PLAYGROUND_PAGE_H_
