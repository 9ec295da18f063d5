// libcurl (Debian: libcurl4-openssl-dev), whose multi interface posts the
// server's webhooks on the libuv loop (Sources/RewindServer/Webhooks/HTTPClient.swift).
// curl_easy_setopt and curl_multi_setopt are variadic, which Swift cannot
// call: these typed forms are the only ways in.
#include <curl/curl.h>

static inline CURLcode rewind_curl_easy_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode rewind_curl_easy_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode rewind_curl_easy_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode rewind_curl_easy_slist(CURL *easy, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode rewind_curl_easy_write_function(CURL *easy, curl_write_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, callback);
}
static inline CURLcode rewind_curl_easy_response_code(CURL *easy, long *code) {
    return curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, code);
}
static inline CURLMcode rewind_curl_multi_pointer(CURLM *multi, CURLMoption option, void *value) {
    return curl_multi_setopt(multi, option, value);
}
static inline CURLMcode rewind_curl_multi_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
static inline CURLMcode rewind_curl_multi_socket_function(CURLM *multi, curl_socket_callback callback) {
    return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, callback);
}
static inline CURLMcode rewind_curl_multi_timer_function(CURLM *multi, curl_multi_timer_callback callback) {
    return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, callback);
}
