! mpitrace.f90: mpitrace's named regions for Fortran (docs/regions.md).
!
! Compile this file with the program (gfortran, ifx, nvfortran, flang: it
! uses Fortran 2008 C interoperability only) and
!
!     use mpitrace
!     call mpitrace_region_push("solve")
!     ...
!     call mpitrace_region_pop()
!
! Nothing else is needed at link time: the first call looks for the
! recorder (the object mpitrace_api_v1 that `mpitrace record` preloads,
! through dlsym, which glibc 2.34 and later have in libc; older ones want
! -ldl). Without the recorder each later call returns after one test. The
! regions are the ones of the C API (mpitrace.h): they nest per thread, a pop
! ends the innermost open region, trailing blanks of a name are dropped.
module mpitrace
    use, intrinsic :: iso_c_binding, only: c_associated, c_char, c_f_pointer, c_f_procpointer, &
        c_funptr, c_int, c_intptr_t, c_null_char, c_null_ptr, c_ptr, c_sizeof
    implicit none
    private
    public :: mpitrace_region_push, mpitrace_region_pop

    ! struct mpitrace_api of mpitrace.h, field for field.
    type, bind(c) :: api_t
        integer(c_int) :: version, size
        type(c_funptr) :: loop_begin, loop_end, iter_begin, iter_end
        type(c_funptr) :: region_push, region_pop, region_push_n
    end type api_t

    abstract interface
        subroutine push_n_t(name, length) bind(c)
            import :: c_char, c_intptr_t
            character(kind=c_char), dimension(*), intent(in) :: name
            integer(c_intptr_t), value :: length
        end subroutine push_n_t
        subroutine pop_t() bind(c)
        end subroutine pop_t
    end interface

    interface
        function mpitrace_dlsym(handle, symbol) bind(c, name="dlsym") result(p)
            import :: c_char, c_ptr
            type(c_ptr), value :: handle
            character(kind=c_char), dimension(*), intent(in) :: symbol
            type(c_ptr) :: p
        end function mpitrace_dlsym
    end interface

    ! 0: not looked for yet, 1: the recorder is there, 2: it is not.
    integer, save :: state = 0
    procedure(push_n_t), pointer, save :: push_n => null()
    procedure(pop_t), pointer, save :: pop => null()

contains

    subroutine resolve()
        type(c_ptr) :: p
        type(api_t), pointer :: a
        type(api_t) :: probe
        procedure(push_n_t), pointer :: f
        procedure(pop_t), pointer :: g
        ! A null handle is RTLD_DEFAULT: every loaded object.
        p = mpitrace_dlsym(c_null_ptr, "mpitrace_api_v1"//c_null_char)
        if (c_associated(p)) then
            call c_f_pointer(p, a)
            if (a%version == 1 .and. a%size >= c_sizeof(probe)) then
                call c_f_procpointer(a%region_push_n, f)
                call c_f_procpointer(a%region_pop, g)
                push_n => f
                pop => g
                state = 1
                return
            end if
        end if
        state = 2
    end subroutine resolve

    subroutine mpitrace_region_push(name)
        character(len=*), intent(in) :: name
        if (state /= 1) then
            if (state == 2) return
            call resolve()
            if (state /= 1) return
        end if
        call push_n(name, int(len_trim(name), c_intptr_t))
    end subroutine mpitrace_region_push

    subroutine mpitrace_region_pop()
        if (state /= 1) then
            if (state == 2) return
            call resolve()
            if (state /= 1) return
        end if
        call pop()
    end subroutine mpitrace_region_pop

end module mpitrace
