/* mpitrace recorder: PMPI wrappers for every function the local mpi.h
 * declares. This file is a wrap template: `mpitrace recorder build`
 * expands it against the MPI's own header (see recorder/wrap).
 *
 * Every wrapper has the same shape: MPIT_BEGIN decides whether the call is
 * recorded and reads the clock, the PMPI call runs unchanged, and when
 * recorded the clock is read again and one event is appended. Arguments are
 * read after the call (request handles and messages, which PMPI may null,
 * are copied before). The calls the analysis needs carry their arguments;
 * every other function is a plain Call event. */
#include "mpit.h"
#include <string.h>

/* Function ids: 1..N in the order of the declarations, and their names
 * (written to the log's string table). */
enum {
    MPIT_FN_NONE_ = 0,
{{forallfn f}}    MPIT_FN_{{f}},
{{endforallfn}}    MPIT_FN_COUNT_
};
MPIT_HIDDEN const char *const mpit_fn_names[] = {
    "",
{{forallfn f}}    "{{f}}",
{{endforallfn}}};
MPIT_HIDDEN const int mpit_fn_count = MPIT_FN_COUNT_ - 1;

/* ---- lifecycle ---- */

{{fn f MPI_Init MPI_Init_thread}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    {{callfn}}
    if ({{ret_val}} == MPI_SUCCESS) mpit_after_init(-1);
    if (!tb_) return {{ret_val}};
    mpit_call(tb_, MPIT_FN_{{f}}, t0_, mpit_now());
    mpit_clock_event(tb_, MPIT_PHASE_INIT);
    /* On disk at once: a rank killed right after MPI_Init (another rank
     * aborted, and MPICH's launcher SIGKILLs the others) keeps it. */
    mpit_flush_thread(tb_);
{{endfn}}

{{fn f MPI_Finalize}}
    /* The recorder's own work (clock offsets) counts as part of
     * MPI_Finalize, not as the application's computation before it. */
    MPIT_BEGIN(MPIT_FN_{{f}});
    mpit_before_finalize();
    {{callfn}}
    mpit_after_finalize(tb_, MPIT_FN_{{f}}, t0_, mpit_now());
{{endfn}}

{{fn f MPI_Abort}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    if (tb_) mpit_call(tb_, MPIT_FN_{{f}}, t0_, mpit_now());
    mpit_before_abort({{1}});
    {{callfn}}
{{endfn}}

/* ---- point-to-point ---- */

{{fn f MPI_Send MPI_Send_c MPI_Ssend MPI_Ssend_c MPI_Bsend MPI_Bsend_c MPI_Rsend MPI_Rsend_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_send(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, {{3}}, {{4}}, {{5}}, NULL, 0));
{{endfn}}

{{fn f MPI_Isend MPI_Isend_c MPI_Issend MPI_Issend_c MPI_Ibsend MPI_Ibsend_c MPI_Irsend MPI_Irsend_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_send(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, {{3}}, {{4}}, {{5}}, {{6}}, 0));
{{endfn}}

{{fn f MPI_Send_init MPI_Send_init_c MPI_Ssend_init MPI_Ssend_init_c MPI_Bsend_init MPI_Bsend_init_c MPI_Rsend_init MPI_Rsend_init_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_send(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, {{3}}, {{4}}, {{5}}, {{6}}, 1));
{{endfn}}

{{fn f MPI_Recv MPI_Recv_c}}
    MPI_Status s_;
    MPI_Status *sp_ = {{6}} == MPI_STATUS_IGNORE ? &s_ : {{6}};
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, {{3}}, {{4}}, {{5}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_recv(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, {{3}}, {{4}}, {{5}}, sp_));
{{endfn}}

{{fn f MPI_Irecv MPI_Irecv_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_irecv(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, {{3}}, {{4}}, {{5}}, {{6}}, 0));
{{endfn}}

{{fn f MPI_Recv_init MPI_Recv_init_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_irecv(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, {{3}}, {{4}}, {{5}}, {{6}}, 1));
{{endfn}}

{{fn f MPI_Sendrecv MPI_Sendrecv_c}}
    MPI_Status s_;
    MPI_Status *sp_ = {{11}} == MPI_STATUS_IGNORE ? &s_ : {{11}};
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, {{3}}, {{4}}, {{5}}, {{6}}, {{7}}, {{8}}, {{9}}, {{10}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_sendrecv(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, {{3}}, {{4}}, {{6}}, {{7}}, {{8}}, {{9}}, {{10}}, sp_));
{{endfn}}

{{fn f MPI_Sendrecv_replace MPI_Sendrecv_replace_c}}
    MPI_Status s_;
    MPI_Status *sp_ = {{8}} == MPI_STATUS_IGNORE ? &s_ : {{8}};
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, {{3}}, {{4}}, {{5}}, {{6}}, {{7}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_sendrecv(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, {{3}}, {{4}}, {{1}}, {{2}}, {{5}}, {{6}}, {{7}}, sp_));
{{endfn}}

{{fn f MPI_Probe}}
    MPI_Status s_;
    MPI_Status *sp_ = {{3}} == MPI_STATUS_IGNORE ? &s_ : {{3}};
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_probe(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, 1, sp_, NULL));
{{endfn}}

{{fn f MPI_Iprobe}}
    MPI_Status s_;
    MPI_Status *sp_ = {{4}} == MPI_STATUS_IGNORE ? &s_ : {{4}};
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, {{3}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_probe(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, *{{3}}, sp_, NULL));
{{endfn}}

{{fn f MPI_Mprobe}}
    MPI_Status s_;
    MPI_Status *sp_ = {{4}} == MPI_STATUS_IGNORE ? &s_ : {{4}};
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, {{3}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_probe(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, 1, sp_, {{3}}));
{{endfn}}

{{fn f MPI_Improbe}}
    MPI_Status s_;
    MPI_Status *sp_ = {{5}} == MPI_STATUS_IGNORE ? &s_ : {{5}};
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, {{3}}, {{4}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_probe(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, *{{3}}, sp_, {{4}}));
{{endfn}}

{{fn f MPI_Mrecv MPI_Mrecv_c}}
    MPI_Status s_;
    MPI_Status *sp_ = {{4}} == MPI_STATUS_IGNORE ? &s_ : {{4}};
    MPI_Message m_ = *{{3}};
    mpit_comm *mc_ = NULL;
    MPIT_BEGIN_DO(MPIT_FN_{{f}}, mc_ = mpit_msg_take(m_));
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, {{3}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_mrecv(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, m_, mc_, sp_, NULL));
{{endfn}}

{{fn f MPI_Imrecv MPI_Imrecv_c}}
    MPI_Message m_ = *{{3}};
    mpit_comm *mc_ = NULL;
    MPIT_BEGIN_DO(MPIT_FN_{{f}}, mc_ = mpit_msg_take(m_));
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_mrecv(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, m_, mc_, NULL, {{4}}));
{{endfn}}

/* ---- completion: request handles and their ids are taken first (PMPI
 * nulls the handles and frees the requests, whose handles another thread
 * may then be given) ---- */

{{fn f MPI_Wait}}
    MPI_Status s_;
    MPI_Status *sp_ = {{1}} == MPI_STATUS_IGNORE ? &s_ : {{1}};
    mpit_reqcopy r_ = {.h = *{{0}}};
    MPIT_BEGIN_DO(MPIT_FN_{{f}}, mpit_req_peek(1, &r_));
    do { {{ret_val}} = P{{f}}({{0}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    mpit_rec_one(tb_, MPIT_FN_{{f}}, t0_, mpit_now(), {{ret_val}}, 1, &r_, 0, sp_);
{{endfn}}

{{fn f MPI_Test}}
    MPI_Status s_;
    MPI_Status *sp_ = {{2}} == MPI_STATUS_IGNORE ? &s_ : {{2}};
    mpit_reqcopy r_ = {.h = *{{0}}};
    MPIT_BEGIN_DO(MPIT_FN_{{f}}, mpit_req_peek(1, &r_));
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    mpit_rec_one(tb_, MPIT_FN_{{f}}, t0_, mpit_now(), {{ret_val}}, *{{1}}, &r_, 0, sp_);
{{endfn}}

{{fn f MPI_Waitany}}
    MPI_Status s_;
    MPI_Status *sp_ = {{3}} == MPI_STATUS_IGNORE ? &s_ : {{3}};
    mpit_reqcopy rs_[MPIT_STACK_REQS];
    mpit_reqcopy *before_ = mpit_req_copy({{0}}, {{1}}, rs_);
    MPIT_BEGIN_DO(before_ ? MPIT_FN_{{f}} : 0, mpit_req_peek({{0}}, before_));
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (tb_) mpit_rec_one(tb_, MPIT_FN_{{f}}, t0_, mpit_now(), {{ret_val}}, 1, before_, *{{2}}, sp_);
    mpit_free_array(before_, rs_);
{{endfn}}

{{fn f MPI_Testany}}
    MPI_Status s_;
    MPI_Status *sp_ = {{4}} == MPI_STATUS_IGNORE ? &s_ : {{4}};
    mpit_reqcopy rs_[MPIT_STACK_REQS];
    mpit_reqcopy *before_ = mpit_req_copy({{0}}, {{1}}, rs_);
    MPIT_BEGIN_DO(before_ ? MPIT_FN_{{f}} : 0, mpit_req_peek({{0}}, before_));
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, {{3}}, sp_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (tb_) mpit_rec_one(tb_, MPIT_FN_{{f}}, t0_, mpit_now(), {{ret_val}}, *{{3}}, before_, *{{2}}, sp_);
    mpit_free_array(before_, rs_);
{{endfn}}

{{fn f MPI_Waitall}}
    mpit_reqcopy rs_[MPIT_STACK_REQS];
    MPI_Status ss_[MPIT_STACK_REQS];
    mpit_reqcopy *before_ = mpit_req_copy({{0}}, {{1}}, rs_);
    MPI_Status *sp_ = {{2}} == MPI_STATUSES_IGNORE ? mpit_status_array({{0}}, ss_) : {{2}};
    MPIT_BEGIN_DO(before_ && sp_ ? MPIT_FN_{{f}} : 0, mpit_req_peek({{0}}, before_));
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, sp_ ? sp_ : {{2}}); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (tb_) mpit_rec_all(tb_, MPIT_FN_{{f}}, t0_, mpit_now(), {{ret_val}}, 1, {{0}}, before_, sp_);
    mpit_free_array(before_, rs_);
    if (sp_ != {{2}}) mpit_free_array(sp_, ss_);
{{endfn}}

{{fn f MPI_Testall}}
    mpit_reqcopy rs_[MPIT_STACK_REQS];
    MPI_Status ss_[MPIT_STACK_REQS];
    mpit_reqcopy *before_ = mpit_req_copy({{0}}, {{1}}, rs_);
    MPI_Status *sp_ = {{3}} == MPI_STATUSES_IGNORE ? mpit_status_array({{0}}, ss_) : {{3}};
    MPIT_BEGIN_DO(before_ && sp_ ? MPIT_FN_{{f}} : 0, mpit_req_peek({{0}}, before_));
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, sp_ ? sp_ : {{3}}); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (tb_) mpit_rec_all(tb_, MPIT_FN_{{f}}, t0_, mpit_now(), {{ret_val}}, *{{2}}, {{0}}, before_, sp_);
    mpit_free_array(before_, rs_);
    if (sp_ != {{3}}) mpit_free_array(sp_, ss_);
{{endfn}}

{{fn f MPI_Waitsome MPI_Testsome}}
    mpit_reqcopy rs_[MPIT_STACK_REQS];
    MPI_Status ss_[MPIT_STACK_REQS];
    mpit_reqcopy *before_ = mpit_req_copy({{0}}, {{1}}, rs_);
    MPI_Status *sp_ = {{4}} == MPI_STATUSES_IGNORE ? mpit_status_array({{0}}, ss_) : {{4}};
    MPIT_BEGIN_DO(before_ && sp_ ? MPIT_FN_{{f}} : 0, mpit_req_peek({{0}}, before_));
    do { {{ret_val}} = P{{f}}({{0}}, {{1}}, {{2}}, {{3}}, sp_ ? sp_ : {{4}}); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (tb_) mpit_rec_some(tb_, MPIT_FN_{{f}}, t0_, mpit_now(), {{ret_val}}, {{0}}, before_, *{{2}}, {{3}}, sp_);
    mpit_free_array(before_, rs_);
    if (sp_ != {{4}}) mpit_free_array(sp_, ss_);
{{endfn}}

{{fn f MPI_Start}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_start(tb_, MPIT_FN_{{f}}, t0_, t1_, 1, {{0}}));
{{endfn}}

{{fn f MPI_Startall}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_start(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}));
{{endfn}}

{{fn f MPI_Request_free}}
    mpit_reqcopy r_ = {.h = *{{0}}};
    MPIT_BEGIN_DO(MPIT_FN_{{f}}, mpit_req_peek(1, &r_));
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_reqfree(tb_, MPIT_FN_{{f}}, t0_, t1_, &r_));
{{endfn}}

{{fn f MPI_Cancel}}
    mpit_reqcopy r_ = {.h = *{{0}}};
    MPIT_BEGIN_DO(MPIT_FN_{{f}}, mpit_req_peek(1, &r_));
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_cancel(tb_, MPIT_FN_{{f}}, t0_, t1_, &r_));
{{endfn}}

/* ---- collectives: the bytes this rank sends and receives ---- */

{{fn f MPI_Barrier}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_coll(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, MPIT_NO_ROOT, 0, 0, NULL));
{{endfn}}

{{fn f MPI_Ibarrier}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_coll(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, MPIT_NO_ROOT, 0, 0, {{1}}));
{{endfn}}

{{fn f MPI_Bcast MPI_Bcast_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_bcast(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, {{3}}, {{4}}, NULL));
{{endfn}}

{{fn f MPI_Ibcast MPI_Ibcast_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_bcast(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, {{2}}, {{3}}, {{4}}, {{5}}));
{{endfn}}

{{fn f MPI_Gather MPI_Gather_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_gather(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, {{4}}, {{5}}, NULL, 0, {{6}}, {{7}}, NULL));
{{endfn}}

{{fn f MPI_Igather MPI_Igather_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_gather(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, {{4}}, {{5}}, NULL, 0, {{6}}, {{7}}, {{8}}));
{{endfn}}

{{fn f MPI_Gatherv MPI_Gatherv_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_gather(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, 0, {{6}}, MPIT_ARR({{4}}), {{7}}, {{8}}, NULL));
{{endfn}}

{{fn f MPI_Igatherv MPI_Igatherv_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_gather(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, 0, {{6}}, MPIT_ARR({{4}}), {{7}}, {{8}}, {{9}}));
{{endfn}}

{{fn f MPI_Scatter MPI_Scatter_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_scatter(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, NULL, 0, {{2}}, {{3}}, {{4}}, {{5}}, {{6}}, {{7}}, NULL));
{{endfn}}

{{fn f MPI_Iscatter MPI_Iscatter_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_scatter(tb_, MPIT_FN_{{f}}, t0_, t1_, {{1}}, NULL, 0, {{2}}, {{3}}, {{4}}, {{5}}, {{6}}, {{7}}, {{8}}));
{{endfn}}

{{fn f MPI_Scatterv MPI_Scatterv_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_scatter(tb_, MPIT_FN_{{f}}, t0_, t1_, 0, MPIT_ARR({{1}}), {{3}}, {{4}}, {{5}}, {{6}}, {{7}}, {{8}}, NULL));
{{endfn}}

{{fn f MPI_Iscatterv MPI_Iscatterv_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_scatter(tb_, MPIT_FN_{{f}}, t0_, t1_, 0, MPIT_ARR({{1}}), {{3}}, {{4}}, {{5}}, {{6}}, {{7}}, {{8}}, {{9}}));
{{endfn}}

{{fn f MPI_Allgather MPI_Allgather_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_allgather(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, {{4}}, NULL, 0, {{5}}, {{6}}, NULL));
{{endfn}}

{{fn f MPI_Iallgather MPI_Iallgather_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_allgather(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, {{4}}, NULL, 0, {{5}}, {{6}}, {{7}}));
{{endfn}}

{{fn f MPI_Allgatherv MPI_Allgatherv_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_allgather(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, 0, MPIT_ARR({{4}}), {{6}}, {{7}}, NULL));
{{endfn}}

{{fn f MPI_Iallgatherv MPI_Iallgatherv_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_allgather(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, {{2}}, 0, MPIT_ARR({{4}}), {{6}}, {{7}}, {{8}}));
{{endfn}}

{{fn f MPI_Alltoall MPI_Alltoall_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_alltoall(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, NULL, 0, NULL, {{2}}, {{4}}, NULL, 0, NULL, {{5}}, {{6}}, NULL));
{{endfn}}

{{fn f MPI_Ialltoall MPI_Ialltoall_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_alltoall(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, NULL, 0, NULL, {{2}}, {{4}}, NULL, 0, NULL, {{5}}, {{6}}, {{7}}));
{{endfn}}

{{fn f MPI_Alltoallv MPI_Alltoallv_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_alltoall(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, 0, MPIT_ARR({{1}}), NULL, {{3}}, 0, MPIT_ARR({{5}}), NULL, {{7}}, {{8}}, NULL));
{{endfn}}

{{fn f MPI_Ialltoallv MPI_Ialltoallv_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_alltoall(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, 0, MPIT_ARR({{1}}), NULL, {{3}}, 0, MPIT_ARR({{5}}), NULL, {{7}}, {{8}}, {{9}}));
{{endfn}}

{{fn f MPI_Alltoallw MPI_Alltoallw_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_alltoall(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, 0, MPIT_ARR({{1}}), {{3}}, MPI_DATATYPE_NULL, 0, MPIT_ARR({{5}}), {{7}}, MPI_DATATYPE_NULL, {{8}}, NULL));
{{endfn}}

{{fn f MPI_Ialltoallw MPI_Ialltoallw_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_alltoall(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, 0, MPIT_ARR({{1}}), {{3}}, MPI_DATATYPE_NULL, 0, MPIT_ARR({{5}}), {{7}}, MPI_DATATYPE_NULL, {{8}}, {{9}}));
{{endfn}}

{{fn f MPI_Reduce MPI_Reduce_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_reduce(tb_, MPIT_FN_{{f}}, t0_, t1_, {{2}}, {{3}}, {{5}}, {{6}}, NULL));
{{endfn}}

{{fn f MPI_Ireduce MPI_Ireduce_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_reduce(tb_, MPIT_FN_{{f}}, t0_, t1_, {{2}}, {{3}}, {{5}}, {{6}}, {{7}}));
{{endfn}}

{{fn f MPI_Allreduce MPI_Allreduce_c MPI_Scan MPI_Scan_c MPI_Exscan MPI_Exscan_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_reduce(tb_, MPIT_FN_{{f}}, t0_, t1_, {{2}}, {{3}}, MPIT_NO_ROOT, {{5}}, NULL));
{{endfn}}

{{fn f MPI_Iallreduce MPI_Iallreduce_c MPI_Iscan MPI_Iscan_c MPI_Iexscan MPI_Iexscan_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_reduce(tb_, MPIT_FN_{{f}}, t0_, t1_, {{2}}, {{3}}, MPIT_NO_ROOT, {{5}}, {{6}}));
{{endfn}}

{{fn f MPI_Reduce_scatter MPI_Reduce_scatter_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_reduce_scatter(tb_, MPIT_FN_{{f}}, t0_, t1_, 0, MPIT_ARR({{2}}), {{3}}, {{5}}, NULL));
{{endfn}}

{{fn f MPI_Ireduce_scatter MPI_Ireduce_scatter_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_reduce_scatter(tb_, MPIT_FN_{{f}}, t0_, t1_, 0, MPIT_ARR({{2}}), {{3}}, {{5}}, {{6}}));
{{endfn}}

{{fn f MPI_Reduce_scatter_block MPI_Reduce_scatter_block_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_reduce_scatter(tb_, MPIT_FN_{{f}}, t0_, t1_, {{2}}, NULL, 0, {{3}}, {{5}}, NULL));
{{endfn}}

{{fn f MPI_Ireduce_scatter_block MPI_Ireduce_scatter_block_c}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_reduce_scatter(tb_, MPIT_FN_{{f}}, t0_, t1_, {{2}}, NULL, 0, {{3}}, {{5}}, {{6}}));
{{endfn}}

/* ---- communicators: an id equal on all members, members in world ranks ---- */

{{fn f MPI_Comm_dup}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{1}}, MPIT_NEW_COLLECTIVE, 0));
{{endfn}}

{{fn f MPI_Comm_dup_with_info}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{2}}, MPIT_NEW_COLLECTIVE, 0));
{{endfn}}

{{fn f MPI_Comm_split}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{3}}, MPIT_NEW_COLLECTIVE, 0));
{{endfn}}

{{fn f MPI_Comm_split_type}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{4}}, MPIT_NEW_COLLECTIVE, 0));
{{endfn}}

{{fn f MPI_Comm_create}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{2}}, MPIT_NEW_COLLECTIVE, 0));
{{endfn}}

{{fn f MPI_Comm_create_group}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{3}}, MPIT_NEW_GROUP, {{2}}));
{{endfn}}

{{fn f MPI_Cart_create MPI_Graph_create}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{5}}, MPIT_NEW_COLLECTIVE, 0));
{{endfn}}

{{fn f MPI_Cart_sub}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{2}}, MPIT_NEW_COLLECTIVE, 0));
{{endfn}}

{{fn f MPI_Dist_graph_create}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{8}}, MPIT_NEW_COLLECTIVE, 0));
{{endfn}}

{{fn f MPI_Dist_graph_create_adjacent}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{9}}, MPIT_NEW_COLLECTIVE, 0));
{{endfn}}

{{fn f MPI_Intercomm_create}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{5}}, MPIT_NEW_INTER, {{4}}));
{{endfn}}

{{fn f MPI_Intercomm_merge}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commnew(tb_, MPIT_FN_{{f}}, t0_, t1_, {{0}}, {{2}}, MPIT_NEW_COLLECTIVE, 0));
{{endfn}}

{{fn f MPI_Comm_free MPI_Comm_disconnect}}
    mpit_comm *c_ = mpit_comm_forget(*{{0}});
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    MPIT_RECORD({{ret_val}}, MPIT_FN_{{f}}, mpit_rec_commfree(tb_, MPIT_FN_{{f}}, t0_, t1_, c_));
{{endfn}}

/* ---- error handlers: the recorder's stands for MPI_ERRORS_ARE_FATAL ---- */

{{fn f MPI_Comm_set_errhandler MPI_Errhandler_set}}
    MPI_Errhandler eh_ = mpit_errh_in({{1}});
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{ret_val}} = P{{f}}({{0}}, eh_); } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    mpit_call(tb_, MPIT_FN_{{f}}, t0_, mpit_now());
{{endfn}}

{{fn f MPI_Comm_get_errhandler MPI_Errhandler_get}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if ({{ret_val}} == MPI_SUCCESS) mpit_errh_out({{1}});
    if (!tb_) return {{ret_val}};
    mpit_call(tb_, MPIT_FN_{{f}}, t0_, mpit_now());
{{endfn}}

/* ---- every other function: a Call event ---- */

{{fnall f MPI_Init MPI_Init_thread MPI_Finalize MPI_Abort MPI_Send MPI_Send_c MPI_Ssend MPI_Ssend_c MPI_Bsend MPI_Bsend_c MPI_Rsend MPI_Rsend_c MPI_Isend MPI_Isend_c MPI_Issend MPI_Issend_c MPI_Ibsend MPI_Ibsend_c MPI_Irsend MPI_Irsend_c MPI_Send_init MPI_Send_init_c MPI_Ssend_init MPI_Ssend_init_c MPI_Bsend_init MPI_Bsend_init_c MPI_Rsend_init MPI_Rsend_init_c MPI_Recv MPI_Recv_c MPI_Irecv MPI_Irecv_c MPI_Recv_init MPI_Recv_init_c MPI_Sendrecv MPI_Sendrecv_c MPI_Sendrecv_replace MPI_Sendrecv_replace_c MPI_Probe MPI_Iprobe MPI_Mprobe MPI_Improbe MPI_Mrecv MPI_Mrecv_c MPI_Imrecv MPI_Imrecv_c MPI_Wait MPI_Test MPI_Waitany MPI_Testany MPI_Waitall MPI_Testall MPI_Waitsome MPI_Testsome MPI_Start MPI_Startall MPI_Request_free MPI_Cancel MPI_Barrier MPI_Ibarrier MPI_Bcast MPI_Bcast_c MPI_Ibcast MPI_Ibcast_c MPI_Gather MPI_Gather_c MPI_Igather MPI_Igather_c MPI_Gatherv MPI_Gatherv_c MPI_Igatherv MPI_Igatherv_c MPI_Scatter MPI_Scatter_c MPI_Iscatter MPI_Iscatter_c MPI_Scatterv MPI_Scatterv_c MPI_Iscatterv MPI_Iscatterv_c MPI_Allgather MPI_Allgather_c MPI_Iallgather MPI_Iallgather_c MPI_Allgatherv MPI_Allgatherv_c MPI_Iallgatherv MPI_Iallgatherv_c MPI_Alltoall MPI_Alltoall_c MPI_Ialltoall MPI_Ialltoall_c MPI_Alltoallv MPI_Alltoallv_c MPI_Ialltoallv MPI_Ialltoallv_c MPI_Alltoallw MPI_Alltoallw_c MPI_Ialltoallw MPI_Ialltoallw_c MPI_Reduce MPI_Reduce_c MPI_Ireduce MPI_Ireduce_c MPI_Allreduce MPI_Allreduce_c MPI_Scan MPI_Scan_c MPI_Exscan MPI_Exscan_c MPI_Iallreduce MPI_Iallreduce_c MPI_Iscan MPI_Iscan_c MPI_Iexscan MPI_Iexscan_c MPI_Reduce_scatter MPI_Reduce_scatter_c MPI_Ireduce_scatter MPI_Ireduce_scatter_c MPI_Reduce_scatter_block MPI_Reduce_scatter_block_c MPI_Ireduce_scatter_block MPI_Ireduce_scatter_block_c MPI_Comm_dup MPI_Comm_dup_with_info MPI_Comm_split MPI_Comm_split_type MPI_Comm_create MPI_Comm_create_group MPI_Cart_create MPI_Graph_create MPI_Cart_sub MPI_Dist_graph_create MPI_Dist_graph_create_adjacent MPI_Intercomm_create MPI_Intercomm_merge MPI_Comm_free MPI_Comm_disconnect MPI_Comm_set_errhandler MPI_Errhandler_set MPI_Comm_get_errhandler MPI_Errhandler_get}}
    MPIT_BEGIN(MPIT_FN_{{f}});
    do { {{callfn}} } while (MPIT_AGAIN(MPIT_FN_{{f}}));
    if (!tb_) return {{ret_val}};
    mpit_call(tb_, MPIT_FN_{{f}}, t0_, mpit_now());
{{endfnall}}
